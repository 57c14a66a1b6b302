import type { Format, UserFormat, VideoFormat } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import type { UserPart } from '../../src/model/views.js';

/**
 * Probes: formats that print every part of a user's bundle and the whole video view, so a test
 * that builds with them covers every relation and column the reader exposes, whichever real
 * formats exist.
 */
const ALL_PARTS: UserPart[] = ['uploads', 'groups', 'friends', 'accounts', 'interests', 'playlist', 'recommendations', 'attention', 'readingList'];
const userProbe: UserFormat = {
  name: 'probe-user', scope: 'user', dir: 'probe', file: 'user.json', urlName: 'user.json',
  mediaType: 'application/json', inSitemap: true, summary: 'test probe', cacheClass: 'feeds', needs: ALL_PARTS,
  render: (bundle) => JSON.stringify(bundle, null, 1),
};
const videoProbe: VideoFormat = {
  name: 'probe-video', scope: 'video', dir: 'probe', file: 'video.json', urlName: 'video.json',
  mediaType: 'application/json', inSitemap: true, summary: 'test probe', cacheClass: 'profiles',
  render: (bundle) => JSON.stringify(bundle, null, 1),
};

/** The shipped formats and the two probes. */
export const PROBED: readonly Format[] = [...FORMATS, userProbe, videoProbe];
