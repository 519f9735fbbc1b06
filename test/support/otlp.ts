import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local OTLP/HTTP trace receiver: records every POST to /v1/traces (headers and raw
 * bytes) and decodes them, JSON or protobuf, into one span shape. The protobuf decoder is
 * written here from the OTLP .proto field numbers, independent of the exporter's encoder.
 */
export interface RecordedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, unknown>;
}

export interface ReceivedExport {
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface OtlpReceiver {
  /** The base URL to put in `telemetry.otlp_endpoint`. */
  url: string;
  exports: ReceivedExport[];
  spans: () => RecordedSpan[];
  close: () => Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: ReceivedExport[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      const contentType = request.headers['content-type'] ?? '';
      exports.push({ contentType, headers: request.headers, body: Buffer.concat(chunks) });
      if (contentType.startsWith('application/json')) {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    spans: () => exports.flatMap(decodeExport),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export function decodeExport(received: ReceivedExport): RecordedSpan[] {
  return received.contentType.startsWith('application/json')
    ? decodeJson(JSON.parse(received.body.toString('utf8')) as JsonRequest)
    : decodeProtobuf(received.body);
}

// ---- OTLP/JSON ----

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
}
interface JsonKeyValue {
  key: string;
  value: JsonValue;
}
interface JsonRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        attributes?: JsonKeyValue[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function jsonValue(value: JsonValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(jsonValue);
  return null;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((pair) => [pair.key, jsonValue(pair.value)]));
}

function decodeJson(request: JsonRequest): RecordedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        attributes: jsonAttributes(span.attributes),
        statusCode: span.status?.code ?? 0,
        resource,
      })),
    );
  });
}

// ---- OTLP/protobuf (opentelemetry/proto/trace/v1/trace.proto) ----

class Reader {
  position = 0;
  constructor(private readonly bytes: Uint8Array) {}

  done(): boolean {
    return this.position >= this.bytes.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = this.bytes[this.position++];
      if (byte === undefined) throw new Error('truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  /** Each field of a message: its number, wire type, and a reader of its value. */
  *fields(): Generator<{ field: number; wire: number }> {
    while (!this.done()) {
      const tag = Number(this.varint());
      yield { field: tag >>> 3, wire: tag & 7 };
    }
  }

  bytesField(): Uint8Array {
    const length = Number(this.varint());
    const value = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  fixed64(): DataView {
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.position, 8);
    this.position += 8;
    return view;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.position += 8;
    else if (wire === 2) this.bytesField();
    else if (wire === 5) this.position += 4;
    else throw new Error(`wire type ${wire}`);
  }
}

const utf8 = new TextDecoder();
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

function anyValue(bytes: Uint8Array): unknown {
  const reader = new Reader(bytes);
  let value: unknown = null;
  for (const { field, wire } of reader.fields()) {
    if (field === 1 && wire === 2) value = utf8.decode(reader.bytesField());
    else if (field === 2 && wire === 0) value = reader.varint() !== 0n;
    else if (field === 3 && wire === 0) value = Number(BigInt.asIntN(64, reader.varint()));
    else if (field === 4 && wire === 1) value = reader.fixed64().getFloat64(0, true);
    else if (field === 5 && wire === 2) {
      const array = new Reader(reader.bytesField());
      const values: unknown[] = [];
      for (const item of array.fields()) {
        if (item.field === 1 && item.wire === 2) values.push(anyValue(array.bytesField()));
        else array.skip(item.wire);
      }
      value = values;
    } else reader.skip(wire);
  }
  return value;
}

function keyValue(bytes: Uint8Array): [string, unknown] {
  const reader = new Reader(bytes);
  let key = '';
  let value: unknown = null;
  for (const { field, wire } of reader.fields()) {
    if (field === 1 && wire === 2) key = utf8.decode(reader.bytesField());
    else if (field === 2 && wire === 2) value = anyValue(reader.bytesField());
    else reader.skip(wire);
  }
  return [key, value];
}

function attributesOf(bytes: Uint8Array, attributeField: number): Record<string, unknown> {
  const reader = new Reader(bytes);
  const attributes: Record<string, unknown> = {};
  for (const { field, wire } of reader.fields()) {
    if (field === attributeField && wire === 2) {
      const [key, value] = keyValue(reader.bytesField());
      attributes[key] = value;
    } else reader.skip(wire);
  }
  return attributes;
}

function span(bytes: Uint8Array, resource: Record<string, unknown>): RecordedSpan {
  const reader = new Reader(bytes);
  const decoded: RecordedSpan = {
    traceId: '',
    spanId: '',
    parentSpanId: '',
    name: '',
    attributes: attributesOf(bytes, 9),
    statusCode: 0,
    resource,
  };
  for (const { field, wire } of reader.fields()) {
    if (field === 1 && wire === 2) decoded.traceId = hex(reader.bytesField());
    else if (field === 2 && wire === 2) decoded.spanId = hex(reader.bytesField());
    else if (field === 4 && wire === 2) decoded.parentSpanId = hex(reader.bytesField());
    else if (field === 5 && wire === 2) decoded.name = utf8.decode(reader.bytesField());
    else if (field === 15 && wire === 2) {
      const status = new Reader(reader.bytesField());
      for (const item of status.fields()) {
        if (item.field === 3 && item.wire === 0) decoded.statusCode = Number(status.varint());
        else status.skip(item.wire);
      }
    } else reader.skip(wire);
  }
  return decoded;
}

function decodeProtobuf(body: Uint8Array): RecordedSpan[] {
  const spans: RecordedSpan[] = [];
  const request = new Reader(body);
  for (const { field, wire } of request.fields()) {
    if (field !== 1 || wire !== 2) {
      request.skip(wire);
      continue;
    }
    const resourceSpans = request.bytesField();
    let resource: Record<string, unknown> = {};
    const scopes: Uint8Array[] = [];
    const reader = new Reader(resourceSpans);
    for (const item of reader.fields()) {
      if (item.field === 1 && item.wire === 2) resource = attributesOf(reader.bytesField(), 1);
      else if (item.field === 2 && item.wire === 2) scopes.push(reader.bytesField());
      else reader.skip(item.wire);
    }
    for (const scope of scopes) {
      const scopeReader = new Reader(scope);
      for (const item of scopeReader.fields()) {
        if (item.field === 2 && item.wire === 2)
          spans.push(span(scopeReader.bytesField(), resource));
        else scopeReader.skip(item.wire);
      }
    }
  }
  return spans;
}
