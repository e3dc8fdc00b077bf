/**
 * The user code of a command line's sign-in through the browser (RFC 8628, 6.1): 8 letters shown
 * as `XXXX-XXXX`, from an alphabet without vowels (no words) and without look-alikes. The
 * coordinator draws them; the dashboard's /device page and the coordinator read what a user typed
 * with `normalizeUserCode`.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

/** 8 letters as the code is shown: `WDJBMJHT` → `WDJB-MJHT`. */
export const formatUserCode = (letters: string): string => `${letters.slice(0, 4)}-${letters.slice(4)}`;

/**
 * The code in its one form, `XXXX-XXXX`, from what a user typed or an address carried (any case,
 * with or without the hyphen or spaces); null for anything that cannot be one.
 */
export function normalizeUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== USER_CODE_LENGTH) return null;
  for (const letter of letters) if (!USER_CODE_ALPHABET.includes(letter)) return null;
  return formatUserCode(letters);
}
