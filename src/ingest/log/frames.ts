// The ingest log's framing: each record is its UTF-8 JSON text behind an 8-byte header, the text's
// length and CRC-32 (little-endian). A record cut short by a crash, or whose checksum fails, ends
// the readable log: nothing after it was acknowledged (appends are acknowledged in file order).

import { crc32 } from 'node:zlib';

export const HEADER_BYTES = 8;

export function encodeFrame(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.length);
  frame.writeUInt32LE(body.length, 0);
  frame.writeUInt32LE(crc32(body), 4);
  body.copy(frame, HEADER_BYTES);
  return frame;
}

export interface Frame {
  text: string;
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
    frames.push({ text: body.toString('utf8'), end });
    at = end;
  }
  return { frames, end: at };
}
