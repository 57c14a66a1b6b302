import { afterEach, describe, expect, it, vi } from 'vitest';

const setFlagsFromString = vi.fn();
vi.mock('node:v8', async (original) => ({ ...(await original<typeof import('node:v8')>()), setFlagsFromString }));
const { HEAP_GROWING_PERCENT, setGarbageCollection } = await import('../../src/cli/heap.js');

afterEach(() => setFlagsFromString.mockClear());

describe('the V8 flags the command line sets', () => {
  it('bounds heap growth and turns parallel scavenges off', () => {
    setGarbageCollection([]);
    expect(setFlagsFromString.mock.calls.map(([flag]) => flag)).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`, '--no-parallel-scavenge']);
  });

  it('leaves alone what was given to node itself', () => {
    setGarbageCollection(['--heap-growing-percent=100', '--parallel-scavenge']);
    expect(setFlagsFromString).not.toHaveBeenCalled();
    setGarbageCollection(['--no-parallel-scavenge']);
    expect(setFlagsFromString.mock.calls.map(([flag]) => flag)).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
  });
});
