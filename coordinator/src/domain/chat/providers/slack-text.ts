/** Slack's three escaped control characters (https://api.slack.com/reference/surfaces/formatting#escaping). */
const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>' };

/**
 * A link Slack recognised in what someone wrote: `<https://example.com/a>`, or with the text they
 * typed when it was no full address (`<http://example.com|example.com>`, `<mailto:a@b.c|a@b.c>`).
 */
const LINK = /<((?:https?|mailto):[^|>]*)(?:\|([^>]*))?>/g;

/**
 * A command's text as its writer typed it, from the text Slack sends in a slash command or an
 * app mention. Slack sends what people write as message text: `&`, `<` and `>` as `&amp;`, `&lt;`
 * and `&gt;`, and the links it recognises in `<...>`. Read as it arrives, `msg="a & b"` would run
 * with `a &amp; b` and `url=https://example.com/?a=1&b=2` with
 * `<https://example.com/?a=1&amp;b=2>`. Mentions of people and channels (`<@U0123>`, `<#C0123|ops>`)
 * stay as Slack writes them: their ids are what a run can use. One pass each, so a writer's own
 * `&lt;` (sent as `&amp;lt;`) stays `&lt;`.
 */
export function slackTypedText(text: string): string {
  return text
    .replace(LINK, (_, url: string, label: string | undefined) => label ?? url)
    .replace(/&(?:amp|lt|gt);/g, (entity) => ENTITIES[entity]!);
}
