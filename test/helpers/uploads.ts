import { connect } from "node:net";
import { expect } from "vitest";

/**
 * Checks a file upload route's size limit both ways it is met: a Content-Length over `limit` is
 * 413 before the body is read (the server closes the connection rather than drain the rest), and
 * a body without one is cut off with 413 once past the limit as it streams in.
 */
export async function expectUploadLimit(opts: {
  baseUrl: string;
  path: string;
  token: string;
  contentType: string;
  limit: number;
  /** The first bytes sent after the declaring headers. */
  head: string;
}): Promise<void> {
  const { baseUrl, path, token, contentType, limit, head } = opts;
  const { port } = new URL(baseUrl);
  const socket = connect(Number(port), "127.0.0.1");
  const answer = new Promise<string>((resolve, reject) => {
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString()));
    socket.on("end", () => resolve(text)); // the server closes: it will not drain the rest
    socket.on("error", reject);
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
      `Authorization: Bearer ${token}\r\nContent-Type: ${contentType}\r\n` +
      `Content-Length: ${limit + 1}\r\n\r\n${head}`,
  );
  const text = await answer;
  socket.destroy();
  expect(text).toMatch(/^HTTP\/1\.1 413 /);
  expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toEqual({
    detail: `Upload declares ${limit + 1} bytes; the limit is ${limit}`,
  });

  // No Content-Length: cut off as it streams in.
  const chunk = new Uint8Array(1024 * 1024);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent > limit + 2 * chunk.length) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const streamed = await fetch(new URL(path, baseUrl), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body,
    duplex: "half",
  } as RequestInit);
  expect(streamed.status).toBe(413);
  expect(await streamed.json()).toEqual({ detail: `Upload exceeds ${limit} bytes` });
}
