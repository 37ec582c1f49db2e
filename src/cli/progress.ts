/**
 * Progress of long work (training, thousands of rows, a wait before a retry) on stderr: a bar with a
 * count, rate and ETA. Only on a terminal and without `--quiet`: piped or captured output stays
 * exactly what it was. The bar library loads only when a bar is drawn.
 */
export interface Progress {
  /** Starts (or restarts) a bar for `total` units of work named `label`. */
  start(label: string, total: number): void;
  /** Sets how many units are done. */
  update(done: number): void;
  /** Removes the bar, leaving the terminal as it was. */
  stop(): void;
}

const SILENT: Progress = { start() {}, update() {}, stop() {} };

/** Whether a bar would be seen: stderr is a terminal and the user did not ask for quiet. */
export function showsProgress(quiet: boolean | undefined): boolean {
  return quiet !== true && process.stderr.isTTY === true;
}

export async function createProgress(quiet: boolean | undefined): Promise<Progress> {
  if (!showsProgress(quiet)) return SILENT;
  const { default: cliProgress } = await import('cli-progress');
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{label} [{bar}] {value}/{total} {percentage}% | {rate}/s | ETA {eta_formatted}',
      barsize: 24,
      // Neither hide the cursor nor turn line wrap off: a Ctrl-C kills the process before the bar could
      // turn them back, and would leave the user's terminal without a cursor or wrapping. A line too
      // long for the terminal is cut to its width instead.
      hideCursor: false,
      linewrap: true,
      clearOnComplete: true,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = 0;
  let running = false;
  const rate = (done: number): string => {
    const seconds = (performance.now() - started) / 1000;
    return seconds <= 0 ? '0' : (done / seconds).toFixed(done / seconds >= 100 ? 0 : 1);
  };
  return {
    start(label, total) {
      if (running) bar.stop();
      started = performance.now();
      running = true;
      bar.start(Math.max(total, 1), 0, { label, rate: '0' });
    },
    update(done) {
      if (running) bar.update(done, { rate: rate(done) });
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}

/** A router's `onTrainProgress` that draws on `progress` (a bar only when the model is trained). */
export function trainingProgress(progress: Progress): (done: number, total: number) => void {
  let total = 0;
  return (done, passes) => {
    if (passes !== total) progress.start('training the model', passes);
    total = passes;
    progress.update(done);
    if (done === passes) progress.stop();
  };
}

/**
 * A call's `onRetryWait` that counts down the wait on `progress`, in seconds, so a call stuck behind a
 * rate limit says what it waits for instead of looking hung.
 */
export function retryWaitProgress(
  progress: Progress,
): (event: { spec: string; errorCode: string; retry: number; delayMs: number }) => void {
  return ({ spec, errorCode, retry, delayMs }) => {
    const seconds = Math.max(1, Math.ceil(delayMs / 1000));
    const started = performance.now();
    progress.start(`${spec}: ${errorCode}, retry ${retry} in`, seconds);
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      progress.update(Math.min(seconds, Math.floor(elapsed / 1000)));
      if (elapsed >= delayMs) {
        clearInterval(timer);
        progress.stop();
      }
    }, 250);
    // The wait itself keeps the process alive; the countdown must not outlive it.
    timer.unref();
  };
}
