/** Polls until `check` holds or `deadlineMs` passes, and says which; never sleeps longer than it must. */
export async function until(check: () => boolean, deadlineMs: number): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return check();
}
