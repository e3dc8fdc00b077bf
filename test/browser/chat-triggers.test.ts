import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgentStateDir } from '../helpers/agent-daemon.js';
import {
  CHROMIUM,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  signIn,
  type TestPage,
} from '../helpers/browser.js';
import { connectWorkspace } from '../helpers/chat.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { FakeSlack, SLACK_CODE, SLACK_TEAM, slackEnv } from '../helpers/fake-slack.js';

/**
 * A chat trigger's form and page in a real Chromium against a real coordinator connected to the
 * fake Slack: the workspace offered from the connected ones and named once chosen, an unknown one
 * flagged at its field, who may run it, the saved settings; once the workspace is disconnected
 * the trigger's page and the list say that its command is not run. Checked with axe-core and for
 * CSP violations.
 */
describe.skipIf(!CHROMIUM)('chat triggers in a browser', () => {
  const slack = new FakeSlack();
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let agentId: string;

  beforeAll(async () => {
    await slack.start();
    t = await startTestCoordinator({ env: slackEnv(slack) });
    ({ agentId } = await enrollAgentStateDir(t));
    await t.owner.patch(`/orgs/${t.orgId}/agents/${agentId}`, { body: { name: 'edge-1' } });
    const { completion } = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: SLACK_CODE, state }));
    expect(completion.body.outcome, completion.text).toBe('connected');
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await slack.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const chat = () => page().getByRole('group', { name: 'Chat command' });

  it('creates a Slack trigger for a connected workspace, limited to the people it lists', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers/new`);
    await page().getByLabel('Name').fill('Greeter');
    await page().getByLabel('Type').selectOption('slack');
    await page().getByLabel('Agent', { exact: true }).selectOption(agentId);
    await page().getByLabel('Workflow').fill('greet');
    // A workspace that is not connected is flagged where it is typed.
    await chat().getByLabel('Workspace id').fill('T0UNKNOWN');
    await chat().getByText('no Slack workspace T0UNKNOWN is connected to this organization').waitFor();
    // Pasted with spaces around, as ids copied from Slack often are: sent trimmed.
    await chat().getByLabel('Workspace id').fill(` ${SLACK_TEAM.id} `);
    await chat().getByText(`connected: ${SLACK_TEAM.name}`).waitFor();
    await chat().getByLabel('Channel id').fill(' C0DEPLOYS ');
    await chat().getByLabel('Keyword').fill('greet');
    await chat().getByLabel('Who may run it').fill('U0ADA\nU0BOB, <@U0EVE>');
    await expectAccessible(page(), 'the chat trigger form');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    // The API's refusal of one id, at its field.
    await chat().getByText("must be a chat user's id").waitFor();
    await chat().getByLabel('Who may run it').fill('U0ADA\nU0BOB');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    await page().getByRole('heading', { name: 'Greeter', level: 1 }).waitFor();

    const settings = await page().getByRole('definition').allInnerTexts();
    expect(settings).toContain(`/drover greet in channel C0DEPLOYS of ${SLACK_TEAM.id}`);
    expect(settings).toContain('U0ADA, U0BOB');
    expect(await page().getByRole('status', { name: 'Chat connection' }).count()).toBe(0);
    const [trigger] = (await t.owner.get(`/orgs/${t.orgId}/triggers`)).body;
    expect(trigger).toMatchObject({
      type: 'slack',
      chatTeamId: SLACK_TEAM.id,
      chatChannelId: 'C0DEPLOYS',
      chatKeyword: 'greet',
      chatAllowedUserIds: ['U0ADA', 'U0BOB'],
    });
    await expectAccessible(page(), 'a chat trigger');
    expect(owner.problems).toEqual([]);
  });

  it("says on the trigger's page and in the list that a disconnected workspace stopped its command", async () => {
    const [integration] = (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body;
    expect((await t.owner.delete(`/orgs/${t.orgId}/chat-integrations/${integration.id}`)).status).toBe(200);
    await page().reload();
    const status = page().getByRole('status', { name: 'Chat connection' });
    await status.waitFor();
    expect(await status.innerText()).toContain(
      `Its chat command is not run: the Slack workspace ${SLACK_TEAM.id} is not connected to this organization.`,
    );
    await expectAccessible(page(), 'a chat trigger whose workspace is gone');

    await page().getByRole('link', { name: 'All triggers' }).click();
    const row = page().getByRole('row', { name: 'Greeter' });
    await row.getByText('(workspace not connected)').waitFor();
    expect(owner.problems).toEqual([]);
  });
});
