/**
 * PGlite's page cache in tests (`storage.embedded_shared_buffers_mb`): opening zeroes it,
 * and the suite opens hundreds of data directories; the default 128 MiB triples that cost.
 */
export const testSharedBuffersMb = 16;
