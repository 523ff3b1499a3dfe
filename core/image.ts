// RawImage, the pixel type every layer shares, and its PNG encoding and decoding through sharp. Renderers produce raw RGB pixels (which the built-in model
// consumes directly); PNG is only for datasets on disk and for chat models.
import sharp from 'sharp';

/** One pixel's colour, red, green, blue in 0-255: what renderers' palettes hold. */
export type Rgb = readonly [number, number, number];

/** An RGB image, row-major, 3 bytes per pixel: what renderers draw and models read (a core contract). */
export interface RawImage {
  width: number;
  height: number;
  channels: 3;
  data: Uint8Array;
}

export async function encodePng(image: RawImage): Promise<Buffer> {
  return sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength), {
    raw: { width: image.width, height: image.height, channels: image.channels },
  })
    .png({ compressionLevel: 6 })
    .toBuffer();
}

export async function decodePng(png: Uint8Array): Promise<RawImage> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    width: info.width,
    height: info.height,
    channels: 3,
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  };
}

/** Allocate a blank image filled with one colour. */
export function blankImage(width: number, height: number, rgb: Rgb = [255, 255, 255]): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 3) {
    data[i] = rgb[0];
    data[i + 1] = rgb[1];
    data[i + 2] = rgb[2];
  }
  return { width, height, channels: 3, data };
}
