/** Exit code of a process that stopped for bad input (flags, configuration). */
export const EXIT_USAGE = 2;
