import type { SiteReader, VideoLookup } from '../db/site-reader.js';

/**
 * The APIs `vidfeeds serve` calls that other modules own: the oEmbed renderer
 * (src/formats/oembed.ts), the video look-up by public id (SiteReader) and the recommendation
 * validation and storage (src/db/submit-recommendation.ts), in one module, so the server code does not
 * care where they live.
 */
export { oembedHtml, oembedJson, oembedResponse, oembedXml, type OembedResponse } from '../formats/oembed.js';

/** A video by public id: published, private (401) or missing (404). */
export function videoByPublicId(reader: SiteReader, publicId: string): VideoLookup {
  return reader.videoByPublicId(publicId);
}

export { submitRecommendation } from '../db/submit-recommendation.js';
