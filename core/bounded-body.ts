// A fetch Response whose body may be read up to a size and no further: what a server sends past `maxBytes` is never
// read, the connection is cancelled and the read fails with the caller's error, so a server that streams without end
// cannot fill the memory of whoever reads it whole (response.json(), response.text()). A declared Content-Length past
// the bound fails at the first read, before any byte is taken.
export function limitBody(response: Response, maxBytes: number, tooLarge: () => Error): Response {
  if (response.body === null) return response;
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  const reader = response.body.getReader();
  let size = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(stream) {
      if (declared > maxBytes) {
        await reader.cancel();
        stream.error(tooLarge());
        return;
      }
      const { done, value } = await reader.read();
      if (done) return stream.close();
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        stream.error(tooLarge());
        return;
      }
      stream.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  const bounded = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // What a constructed Response cannot be given, and clients read (redirected downloads).
  Object.defineProperties(bounded, { url: { value: response.url }, redirected: { value: response.redirected } });
  return bounded;
}
