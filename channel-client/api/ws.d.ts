/**
 * The part of the `ws` package (8.x, pinned by the lead) the control API uses; `@types/ws` is not installed,
 * so these declarations are written against ws 8.21.0's documented API (doc/ws.md).
 */
declare module "ws" {
  import type { EventEmitter } from "node:events";
  import type { IncomingMessage } from "node:http";
  import type { Duplex } from "node:stream";

  type RawData = Buffer | ArrayBuffer | Buffer[];

  class WebSocket extends EventEmitter {
    static readonly OPEN: 1;
    readonly readyState: 0 | 1 | 2 | 3;
    constructor(address: string, options?: { headers?: Record<string, string>; maxPayload?: number; protocols?: string | string[] });
    send(data: string | Buffer, cb?: (error?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    ping(): void;
    on(event: "message", listener: (data: RawData, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: Buffer) => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    on(event: "open" | "pong", listener: () => void): this;
    on(event: "unexpected-response", listener: (request: unknown, response: IncomingMessage) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
  }

  class WebSocketServer extends EventEmitter {
    constructor(options: { noServer: true; maxPayload?: number });
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, callback: (ws: WebSocket, request: IncomingMessage) => void): void;
    close(callback?: (error?: Error) => void): void;
    readonly clients: Set<WebSocket>;
  }

  export { WebSocket, WebSocketServer, RawData };
  export default WebSocket;
}
