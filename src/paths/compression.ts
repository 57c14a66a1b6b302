import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';

/**
 * The pre-compressed forms a build writes beside each text document when the configuration asks
 * for them (`"compress": ["gzip", "br"]`): `<file>.gz` and `<file>.br`, which nginx's
 * `gzip_static`/`brotli_static`, the generated Apache configuration and `vidfeeds serve` send to
 * clients that accept them. The levels are the smallest output at the cost of a fast level on
 * documents of a few kilobytes: higher brotli qualities cost far more time for little; the
 * measurements are in docs/hosting.md, "Compressed forms beside each document".
 */

export type Encoding = 'gzip' | 'br';

interface EncodingSpec {
  /** What the file name gets appended, and what the Content-Encoding header says. */
  readonly suffix: string;
  compress(body: Uint8Array): Buffer;
  decompress(body: Uint8Array): Buffer;
}

export const GZIP_LEVEL = 9;
export const BROTLI_QUALITY = 5;

export const ENCODINGS: Readonly<Record<Encoding, EncodingSpec>> = {
  gzip: {
    suffix: '.gz',
    compress: (body) => gzipSync(body, { level: GZIP_LEVEL }),
    decompress: (body) => gunzipSync(body),
  },
  br: {
    suffix: '.br',
    compress: (body) =>
      brotliCompressSync(body, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        },
      }),
    decompress: (body) => brotliDecompressSync(body),
  },
};

/** Every encoding vidfeeds knows, in the order servers prefer them (the smaller first). */
export const ALL_ENCODINGS: readonly Encoding[] = ['br', 'gzip'];

export function isEncoding(value: unknown): value is Encoding {
  return typeof value === 'string' && Object.hasOwn(ENCODINGS, value);
}

/** The path of a document's compressed form. */
export function compressedPath(path: string, encoding: Encoding): string {
  return `${path}${ENCODINGS[encoding].suffix}`;
}

/** The document and encoding a compressed file's path names, or null when it names none. */
export function compressedFormOf(path: string): { document: string; encoding: Encoding } | null {
  for (const encoding of ALL_ENCODINGS) {
    const { suffix } = ENCODINGS[encoding];
    if (path.endsWith(suffix) && path.length > suffix.length) return { document: path.slice(0, -suffix.length), encoding };
  }
  return null;
}

export function compress(body: Uint8Array, encoding: Encoding): Buffer {
  return ENCODINGS[encoding].compress(body);
}

/**
 * Whether `compressed` is a valid `encoding` stream that decompresses to exactly `document`; the
 * problem in words when not. For `vidfeeds check`, and the tests.
 */
export function verifyCompressed(document: Uint8Array, compressed: Uint8Array, encoding: Encoding): { ok: true } | { ok: false; problem: string } {
  let inflated: Buffer;
  try {
    inflated = ENCODINGS[encoding].decompress(compressed);
  } catch (error) {
    return { ok: false, problem: `is not valid ${encoding} data (${(error as Error).message})` };
  }
  if (!inflated.equals(document)) {
    return { ok: false, problem: `decompresses to ${inflated.length} bytes that are not the document's ${document.length}: it is stale` };
  }
  return { ok: true };
}

/** The media type without its parameters (`application/rss+xml`), for hosts that match on it. */
export function bareMediaType(mediaType: string): string {
  return mediaType.split(';')[0]!.trim();
}

/**
 * Media types worth compressing: text and XML/JSON/JavaScript, which every document of ours is.
 * Documents of these types get pre-compressed forms.
 */
export function isCompressible(mediaType: string): boolean {
  const bare = bareMediaType(mediaType);
  return bare.startsWith('text/') || /[+/](xml|json|javascript)\b/.test(bare);
}
