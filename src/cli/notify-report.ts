import type { Delivery } from '../deploy/notify.js';
import type { Console } from './output.js';

/** One line per notification on stderr: failures always, successes as a count. */
export function reportDeliveries(deliveries: readonly Delivery[], io: Console): void {
  for (const d of deliveries) {
    if (!d.ok) io.log.error(`not delivered: ${d.what} to ${d.to}: ${d.message ?? 'failed'}`);
  }
  const sent = deliveries.filter((d) => d.ok);
  if (sent.length > 0) io.log.info(`notified: ${sent.map((d) => `${d.what} to ${d.to}`).join('; ')}`);
}
