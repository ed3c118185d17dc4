// The ingest log's framing: each record behind an 8-byte header, its length and CRC-32
// (little-endian). A record is its head (one line of JSON: workspace, time, counts) then a newline
// and its payload bytes, kept as they came (the request's body), so acknowledging never serializes
// what it parsed. Records of the first format are one JSON text and no newline: the whole text is
// both head and payload. A record cut short by a crash, or whose checksum fails, ends the readable
// log: nothing after it was acknowledged (appends are acknowledged in file order).

import { crc32 } from 'node:zlib';

export const HEADER_BYTES = 8;
const NEWLINE = 0x0a;

/** The frame of a record, as the buffers to write: the header and head, then the payload itself (not copied). */
export function encodeFrame(head: string, payload: Buffer): Buffer[] {
  const headBytes = Buffer.byteLength(head);
  const prefix = Buffer.allocUnsafe(HEADER_BYTES + headBytes + 1);
  prefix.write(head, HEADER_BYTES, 'utf8');
  prefix[HEADER_BYTES + headBytes] = NEWLINE;
  const body = prefix.subarray(HEADER_BYTES);
  prefix.writeUInt32LE(body.length + payload.length, 0);
  prefix.writeUInt32LE(crc32(payload, crc32(body)), 4);
  return [prefix, payload];
}

export interface Frame {
  head: string;
  payload: Buffer;
  /** Offset of the byte after the frame. */
  end: number;
}

/** The whole frames of `data` from `offset`, and where the readable part ends (a torn tail starts there). */
export function decodeFrames(data: Buffer, offset = 0): { frames: Frame[]; end: number } {
  const frames: Frame[] = [];
  let at = offset;
  while (at + HEADER_BYTES <= data.length) {
    const length = data.readUInt32LE(at);
    const end = at + HEADER_BYTES + length;
    if (end > data.length) break;
    const body = data.subarray(at + HEADER_BYTES, end);
    if (crc32(body) !== data.readUInt32LE(at + 4)) break;
    const newline = body.indexOf(NEWLINE);
    frames.push(newline === -1
      ? { head: body.toString('utf8'), payload: body, end }
      : { head: body.toString('utf8', 0, newline), payload: body.subarray(newline + 1), end });
    at = end;
  }
  return { frames, end: at };
}
