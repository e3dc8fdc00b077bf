/**
 * Free text an agent reports (log lines, a job's error message), as stored: a NUL character
 * (U+0000), which PostgreSQL's text cannot hold, becomes U+FFFD, on both databases alike, so that
 * the report is not refused (the job would stay running until its deadline) and a copy from
 * SQLite to PostgreSQL does not meet it later.
 */
export const storableText = (text: string): string =>
  text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
