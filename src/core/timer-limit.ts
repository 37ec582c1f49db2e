/**
 * The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). A longer one fires at once, with
 * only a warning, so a limit meant as "never" (a huge `--timeout` or `--idle-timeout`) would end a call
 * immediately: timers are armed for at most this long.
 */
export const MAX_TIMER_MS = 2_147_483_647;
