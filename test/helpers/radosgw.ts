import { RADOSGW_PROGRAMS } from '../../src/bench/radosgw.js';
import { missingPrograms } from './programs.js';

/**
 * The RADOS Gateway the deploy tests run against is the deploy bench's (src/bench/radosgw.ts): a
 * single-node Ceph cluster on loopback in a temporary folder.
 */
export { startRadosgw, type ObjectStore, type RunningRadosgw } from '../../src/bench/radosgw.js';

/** The message of a skipped test when a Ceph program is not installed, or null. */
export function radosgwMissing(): string | null {
  return missingPrograms('the RADOS Gateway tests', RADOSGW_PROGRAMS);
}
