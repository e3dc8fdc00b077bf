/** The command line's version (`drover --version`). */
export const CLI_VERSION = '0.1.0';
