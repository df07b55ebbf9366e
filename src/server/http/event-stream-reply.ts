import type { Readable } from "node:stream";
import type { FastifyReply } from "fastify";

/** Answers with a server-sent event stream: never cached, never buffered by a proxy. */
export function sendEventStream(reply: FastifyReply, stream: Readable): FastifyReply {
  return (
    reply
      .header("content-type", "text/event-stream; charset=utf-8")
      .header("cache-control", "no-store")
      // Proxies that buffer answers (nginx) would hold the events back.
      .header("x-accel-buffering", "no")
      // The connection is the stream's alone: closed with it, it is never left idle for the
      // server's close to wait on.
      .header("connection", "close")
      .send(stream)
  );
}
