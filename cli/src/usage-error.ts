/** A command line the client cannot run as written (exit code 2, with the usage text). */
export class UsageError extends Error {}
