import { once } from "node:events";
import * as net from "node:net";

import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { expect } from "chai";
import { bytesToHex, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { canonBytes } from "../../channel-client/core/canonical";
import { signDigest } from "../../channel-client/core/eip712";
import { BaseError } from "../../channel-client/core/errors";
import {
  acceptTry,
  connectSecure,
  ConnectionClosedError,
  createInit,
  createTry,
  decodeInit,
  decodeTry,
  DEFAULT_MAX_FRAME_BYTES,
  deriveSessionKeys,
  encodeDataBatch,
  encodeFrame,
  encodeHandshakeMessage,
  encodeKeyConfirmation,
  FrameAuthenticationError,
  FrameDecoder,
  FrameReplayError,
  FrameTooLargeError,
  HandshakeError,
  HandshakeTimeoutError,
  initDigest,
  initToJson,
  KeyConfirmationError,
  listenSecure,
  MalformedFrameError,
  MAX_BATCH_PAYLOAD_BYTES,
  MAX_MESSAGE_BYTES,
  MESSAGES_PER_TURN,
  nonceFor,
  RecordOpener,
  RecordSealer,
  RecordType,
  sealRecord,
  SendBufferFullError,
  transcriptHash,
  verifyInit,
  type AuthorizeInitiator,
  type ChannelOpenInit,
  type ChannelOpenTry,
  type HandshakeVersion,
  type ListenSecureParameters,
  type SecureConnection,
  type SecureServer,
  type TransportError,
} from "../../channel-client/transport";
import { rejection, thrown } from "../helpers/assert";
import { hardhatAccount, ROLE } from "../helpers/fixtures";

const HOST = "127.0.0.1";
const SESSION: Hex = `0x${"ab".repeat(32)}`;
const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const stranger = hardhatAccount(ROLE.stranger);

const fill = (length: number, byte: number) => new Uint8Array(length).fill(byte);
const hex = (bytes: Uint8Array) => bytesToHex(bytes);
const text = (s: string) => stringToBytes(s);

/** Message `i` of a sequence: distinct contents and lengths (0..40 bytes of pattern after a label). */
function message(direction: string, i: number): Uint8Array {
  const label = text(`${direction}#${i}:`);
  const out = new Uint8Array(label.length + (i % 41));
  out.set(label);
  for (let j = label.length; j < out.length; j++) out[j] = (i * 31 + j) & 0xff;
  return out;
}

/** Resources a test opened; closed after each test whatever its outcome (see `closeAll`). */
const cleanups: Array<() => unknown> = [];
async function closeAll(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** The payer may open SESSION; anyone else is refused, naming the expected payer. */
const payerOnly: AuthorizeInitiator = async (sessionId, initiator) =>
  sessionId === SESSION && initiator === payer.address
    ? { ok: true }
    : { ok: false, reason: `the payer of session ${SESSION} is ${payer.address}` };

async function listen(overrides: Partial<ListenSecureParameters> = {}): Promise<SecureServer> {
  const server = await listenSecure({ host: HOST, port: 0, account: provider, authorize: payerOnly, ...overrides });
  cleanups.push(() => server.close());
  return server;
}

async function connect(port: number, overrides: { account?: LocalAccount; expectedPeer?: Address; timeoutMs?: number; handshakeVersion?: HandshakeVersion } = {}) {
  const connection = await connectSecure({
    host: HOST,
    port,
    account: overrides.account ?? payer,
    sessionId: SESSION,
    expectedPeer: overrides.expectedPeer ?? provider.address,
    timeoutMs: overrides.timeoutMs,
    handshakeVersion: overrides.handshakeVersion,
  });
  cleanups.push(() => connection.destroy());
  return connection;
}

/** A connected pair: the payer's connection and the provider's, both open. */
async function pair(server: SecureServer): Promise<{ client: SecureConnection; remote: SecureConnection }> {
  const accepted = once(server, "connection") as Promise<[SecureConnection]>;
  const client = await connect(server.port);
  const [remote] = await accepted;
  cleanups.push(() => remote.destroy());
  return { client, remote };
}

/** Collects every message a connection delivers (listening starts delivery); `until(n)` awaits the n-th. */
function collect(connection: SecureConnection) {
  const messages: Uint8Array[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  connection.on("message", (data) => {
    messages.push(data);
    for (const waiter of waiters.filter((w) => w.count <= messages.length)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const until = (count: number) =>
    count <= messages.length ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }));
  return { messages, until };
}

/** Resolves with the first `count` messages of `connection`. */
function nextMessages(connection: SecureConnection, count: number): Promise<Uint8Array[]> {
  return new Promise((resolve) => {
    const received: Uint8Array[] = [];
    const onMessage = (data: Uint8Array) => {
      received.push(data);
      if (received.length === count) {
        connection.off("message", onMessage);
        resolve(received);
      }
    };
    connection.on("message", onMessage);
  });
}

async function rawSocket(port: number): Promise<net.Socket> {
  const socket = net.connect({ host: HOST, port });
  cleanups.push(() => socket.destroy());
  socket.on("error", () => {}); // resets from the server are expected here
  await once(socket, "connect");
  return socket;
}

function expectTyped(error: unknown, name: string): asserts error is BaseError {
  expect(error, `expected a ${name}`).to.be.instanceOf(BaseError);
  expect((error as Error).name).to.equal(name);
}

type Direction = "toServer" | "toClient";
/** Rewrites frame `index` of `direction`: returns the frames to forward in its place (none drops it). */
type Tamper = (direction: Direction, index: number, frame: Uint8Array) => Uint8Array[] | Promise<Uint8Array[]>;

/**
 * A man in the middle on TCP: forwards whole frames between a client and `targetPort`, letting `tamper`
 * rewrite, drop or duplicate them (sequentially per direction, so order is kept).
 */
async function proxy(targetPort: number, tamper: Tamper): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: HOST, port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const forward = (from: net.Socket, to: net.Socket, direction: Direction) => {
      const decoder = new FrameDecoder({ maxFrameBytes: 2 * DEFAULT_MAX_FRAME_BYTES });
      let index = 0;
      let chain = Promise.resolve();
      from.on("data", (chunk: Buffer) => {
        for (const frame of decoder.push(chunk)) {
          const i = index++;
          chain = chain.then(async () => {
            for (const out of await tamper(direction, i, frame)) to.write(encodeFrame(out));
          });
        }
      });
    };
    forward(client, upstream, "toServer");
    forward(upstream, client, "toClient");
  });
  server.listen(0, HOST);
  await once(server, "listening");
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

/** Flips one hex digit of `value` at `position` (keeps it valid lowercase hex). */
function flipHexDigit(value: Hex, position: number): Hex {
  const digit = value[position]!;
  const flipped = (parseInt(digit, 16) ^ 1).toString(16);
  return `${value.slice(0, position)}${flipped}${value.slice(position + 1)}` as Hex;
}

describe("transport: framing", () => {
  it("prefixes the body with its length as uint32 big-endian", () => {
    expect(hex(encodeFrame(new Uint8Array([0xaa, 0xbb, 0xcc])))).to.equal("0x00000003aabbcc");
    expect(hex(encodeFrame(new Uint8Array(0)))).to.equal("0x00000000");
  });

  it("reassembles frames split at every byte boundary, and several frames in one chunk", () => {
    const bodies = [text("first"), new Uint8Array(0), fill(5000, 7), text("last")];
    const stream = new Uint8Array(bodies.reduce((n, b) => n + 4 + b.length, 0));
    let offset = 0;
    for (const body of bodies) {
      stream.set(encodeFrame(body), offset);
      offset += 4 + body.length;
    }
    const oneByteAtATime = new FrameDecoder();
    const frames: Uint8Array[] = [];
    for (let i = 0; i < stream.length; i++) frames.push(...oneByteAtATime.push(stream.subarray(i, i + 1)));
    expect(frames.map(hex)).to.deep.equal(bodies.map(hex));
    expect(oneByteAtATime.bufferedBytes).to.equal(0);

    expect(new FrameDecoder().push(stream).map(hex)).to.deep.equal(bodies.map(hex));
    // A split inside the length prefix and inside a body.
    const split = new FrameDecoder();
    expect(split.push(stream.subarray(0, 2))).to.deep.equal([]);
    expect(split.push(stream.subarray(2, 20)).map(hex)).to.deep.equal([hex(bodies[0]!), hex(bodies[1]!)]);
    expect(split.push(stream.subarray(20)).map(hex)).to.deep.equal(bodies.slice(2).map(hex));
  });

  it("refuses an oversized length prefix as soon as it is complete, before any body", () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 100 });
    expect(decoder.push(new Uint8Array([0, 0, 0, 100])), "exactly the limit is accepted").to.deep.equal([]);
    const small = new FrameDecoder({ maxFrameBytes: 100 });
    expect(small.push(new Uint8Array([0xff, 0xff, 0xff]))).to.deep.equal([]);
    const error = thrown(() => small.push(new Uint8Array([0xff]))) as FrameTooLargeError;
    expectTyped(error, "FrameTooLargeError");
    expect([error.size, error.limit]).to.deep.equal([0xffff_ffff, 100]);
    // Poisoned: the stream cannot be resynchronised.
    expect(thrown(() => small.push(new Uint8Array([0])))).to.equal(error);
    expect(new FrameDecoder().maxFrameBytes).to.equal(DEFAULT_MAX_FRAME_BYTES).and.to.equal((1 << 20) + 25);
  });
});

describe("transport: key schedule and sealing (known answers)", () => {
  it("derives the directional keys with HKDF-SHA256(x25519 ‖ ML-KEM, salt = transcript, info = IOI-CHANNEL-V1)", () => {
    const inputs = { x25519SharedSecret: fill(32, 1), mlkemSharedSecret: fill(32, 2), transcriptHash: `0x${"03".repeat(32)}` as Hex };
    const keys = deriveSessionKeys(inputs);
    expect(hex(keys.initiatorToResponder)).to.equal("0x2fd6f7a39e0af16670760e7c5f42dba747ab8c42aa8c69bfd2b52d55551b9723");
    expect(hex(keys.responderToInitiator)).to.equal("0x2a03bd498c79ec22411b627b271eee9e3a91055acb4885f4595b135f752f65a8");
    // Hybrid: changing either shared secret alone changes both keys.
    for (const changed of [
      { ...inputs, x25519SharedSecret: fill(32, 9) },
      { ...inputs, mlkemSharedSecret: fill(32, 9) },
      { ...inputs, transcriptHash: `0x${"04".repeat(32)}` as Hex },
    ]) {
      const other = deriveSessionKeys(changed);
      expect(hex(other.initiatorToResponder)).to.not.equal(hex(keys.initiatorToResponder));
      expect(hex(other.responderToInitiator)).to.not.equal(hex(keys.responderToInitiator));
    }
  });

  it("runs the whole handshake from fixed ephemeral secrets to fixed transcript and keys (version 1)", async () => {
    const { init, secrets } = await createInit({
      account: payer,
      sessionId: SESSION,
      version: "1",
      ephemeral: { x25519SecretKey: fill(32, 0x11), mlkemKeygenSeed: fill(64, 0x22), nonce: fill(32, 0x33) },
    });
    expect(init.x25519PublicKey).to.equal("0x7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13");
    expect(init.mlkemEncapsulationKey.slice(0, 18)).to.equal("0xbb0c5edacb5afaa3");
    expect(initDigest(init)).to.equal("0xfc3d9bef2c515bc43283a8fed8921cb1518aa0dc86aca8f158649a570e335ec3");
    await verifyInit(init);

    const responder = await createTry({
      account: provider,
      init,
      ephemeral: { x25519SecretKey: fill(32, 0x44), mlkemMessage: fill(32, 0x55), nonce: fill(32, 0x66) },
    });
    expect(responder.tryMessage.mlkemCiphertext.slice(0, 18)).to.equal("0x71a2ec39da11c729");
    expect(responder.transcriptHash).to.equal("0x6dadbe310fc9b80ef06bc9152b0a91ac52313c30547d28e0d0d2592bf93c3cc5");
    expect(transcriptHash(init, responder.tryMessage)).to.equal(responder.transcriptHash);

    const initiator = await acceptTry({ init, secrets, tryMessage: responder.tryMessage, expectedResponder: provider.address });
    const expected = {
      initiatorToResponder: "0x599ec82c2e5132d7f3c28dd91c8cf904370f17d9f2d4ee21b7c529dc83e830cf",
      responderToInitiator: "0xa7db518948be1b536f3e31d9ce31273713468e1a08b6e454e1b439610ee80695",
    };
    for (const side of [initiator, responder]) {
      expect(side.transcriptHash).to.equal(responder.transcriptHash);
      expect(hex(side.keys.initiatorToResponder)).to.equal(expected.initiatorToResponder);
      expect(hex(side.keys.responderToInitiator)).to.equal(expected.responderToInitiator);
    }
    // The initiator's ephemeral secrets are wiped once used.
    expect(secrets.x25519SecretKey.every((b) => b === 0)).to.equal(true);
    expect(secrets.mlkemDecapsulationKey.every((b) => b === 0)).to.equal(true);
  });

  it("runs the same handshake at version 2: the signed messages carry the version, so transcript and keys differ", async () => {
    const { init, secrets } = await createInit({
      account: payer,
      sessionId: SESSION,
      ephemeral: { x25519SecretKey: fill(32, 0x11), mlkemKeygenSeed: fill(64, 0x22), nonce: fill(32, 0x33) },
    });
    expect(init.version).to.equal("2"); // the newest is offered by default
    expect(init.x25519PublicKey).to.equal("0x7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13");
    expect(initDigest(init)).to.equal("0x68b089fa9240f5cea25374df1494cf931a2f2bdda7fb870068d9d8eaac6b2a95");
    const responder = await createTry({
      account: provider,
      init,
      ephemeral: { x25519SecretKey: fill(32, 0x44), mlkemMessage: fill(32, 0x55), nonce: fill(32, 0x66) },
    });
    expect(responder.tryMessage.version).to.equal("2");
    expect(responder.transcriptHash).to.equal("0x98d3ff81017a2584daa1d1478dab7b66b243a17a1369b65068517c7a19629dcc");
    const initiator = await acceptTry({ init, secrets, tryMessage: responder.tryMessage, expectedResponder: provider.address });
    for (const side of [initiator, responder]) {
      expect(hex(side.keys.initiatorToResponder)).to.equal("0x6b651a19935e94a5747a41d47a90e23c840c4058de1a463b58e928310e164073");
      expect(hex(side.keys.responderToInitiator)).to.equal("0x137678391a6bde2e6aef0a68d23ba25204ac2ddb09b7aeb184e1be6d3c4ed67d");
    }
  });

  it("refuses a ChannelOpenTry that answers at another version than the Init offered, even one validly signed", async () => {
    const { init, secrets } = await createInit({ account: payer, sessionId: SESSION });
    const { tryMessage } = await createTry({ account: provider, init });
    const downgraded: ChannelOpenTry = { ...tryMessage, version: "1" };
    downgraded.signature = await signDigest(provider, transcriptHash(init, downgraded));
    const error = await rejection(acceptTry({ init, secrets, tryMessage: downgraded, expectedResponder: provider.address }));
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain("answers at version 1").and.contain("offered 2");
  });

  it("lays out nonces as 16 zero bytes ‖ uint64 big-endian counter and seals counter ‖ XChaCha20-Poly1305(type ‖ payload)", () => {
    expect(hex(nonceFor(0n))).to.equal(`0x${"00".repeat(24)}`);
    expect(hex(nonceFor(1n))).to.equal(`0x${"00".repeat(23)}01`);
    expect(hex(nonceFor(0x0102030405060708n))).to.equal(`0x${"00".repeat(16)}0102030405060708`);
    expect(hex(nonceFor((1n << 64n) - 1n))).to.equal(`0x${"00".repeat(16)}${"ff".repeat(8)}`);

    const key = fill(32, 9);
    const body = sealRecord(key, 5n, RecordType.data, text("hi"));
    expect(hex(body)).to.equal("0x0000000000000005fd2d0d1d6e880b84c7c83db7db643e428ef1cf");
    // Independently: the AEAD of (record type 0x00 ‖ "hi") under nonce(5).
    const direct = xchacha20poly1305(key, nonceFor(5n)).encrypt(new Uint8Array([0x00, 0x68, 0x69]));
    expect(hex(body.subarray(8))).to.equal(hex(direct));
  });

  it("accepts exactly the next counter: replays, gaps and forgeries are refused with typed errors", () => {
    const key = fill(32, 5);
    const sealer = new RecordSealer(key);
    const frames = [0, 1, 2].map((i) => sealer.seal(RecordType.data, text(`m${i}`)));

    const replay = new RecordOpener(key);
    expect(hex(replay.open(frames[0]!).payload)).to.equal(hex(text("m0")));
    const replayed = thrown(() => replay.open(frames[0]!)) as FrameReplayError;
    expectTyped(replayed, "FrameReplayError");
    expect([replayed.expected, replayed.received]).to.deep.equal([1n, 0n]);

    const gap = thrown(() => new RecordOpener(key).open(frames[1]!)) as FrameReplayError;
    expectTyped(gap, "FrameReplayError");
    expect(gap.message).to.contain("dropped");

    const forged = frames[0]!.slice();
    forged[12]! ^= 0x01;
    expectTyped(thrown(() => new RecordOpener(key).open(forged)), "FrameAuthenticationError");
    const wrongKey = new RecordOpener(fill(32, 6));
    expectTyped(thrown(() => wrongKey.open(frames[0]!)), "FrameAuthenticationError");
    // A forged counter is a forgery, not a replay: the frame does not authenticate under its own counter.
    const recountered = frames[0]!.slice();
    recountered[7] = 9;
    expectTyped(thrown(() => new RecordOpener(key).open(recountered)), "FrameAuthenticationError");
    expectTyped(thrown(() => new RecordOpener(key).open(new Uint8Array(24))), "MalformedFrameError");
  });
});

describe("transport: handshake message validation", () => {
  let init: ChannelOpenInit;
  let tryMessage: ChannelOpenTry;
  before(async () => {
    ({ init } = await createInit({ account: payer, sessionId: SESSION }));
    ({ tryMessage } = await createTry({ account: provider, init }));
  });

  const initJson = () => initToJson(init) as Record<string, unknown>;
  const bytesOf = (value: unknown) => canonBytes(value);

  it("refuses malformed ChannelOpenInit with a HandshakeError whose cause names the field", () => {
    const cases: Array<[string, Uint8Array, string, string]> = [
      ["not JSON", text("{"), "InvalidJsonError", "not valid JSON"],
      ["non-canonical JSON", text(JSON.stringify(initJson(), null, 1)), "NonCanonicalJsonError", "canonical"],
      ["an unknown field", bytesOf({ ...initJson(), extra: 1 }), "UnknownFieldError", "ChannelOpenInit.extra"],
      ["a missing field", bytesOf(without(initJson(), "nonce")), "InvalidFieldError", "ChannelOpenInit.nonce"],
      ["another version", bytesOf({ ...initJson(), version: "3" }), "InvalidFieldError", "ChannelOpenInit.version"],
      ["a Try where an Init belongs", encodeHandshakeMessage(tryMessage), "InvalidFieldError", "ChannelOpenInit.type"],
      ["a 31-byte X25519 key", bytesOf({ ...initJson(), x25519PublicKey: `0x${"11".repeat(31)}` }), "InvalidFieldError", "32 bytes"],
      ["a short ML-KEM key", bytesOf({ ...initJson(), mlkemEncapsulationKey: `0x${"11".repeat(1183)}` }), "InvalidFieldError", "1184 bytes"],
      ["uppercase hex", bytesOf({ ...initJson(), nonce: `0x${"AB".repeat(32)}` }), "InvalidFieldError", "ChannelOpenInit.nonce"],
      ["a bad session id", bytesOf({ ...initJson(), sessionId: "0x1234" }), "InvalidFieldError", "ChannelOpenInit.sessionId"],
      ["a checksummed address", bytesOf({ ...initJson(), initiator: payer.address }), "InvalidFieldError", "ChannelOpenInit.initiator"],
      ["an oversized message", text(`"${"a".repeat(9000)}"`), "SizeLimitError", "limit"],
    ];
    for (const [label, bytes, causeName, mention] of cases) {
      const error = thrown(() => decodeInit(bytes));
      expectTyped(error, "HandshakeError");
      expect((error.cause as Error).name, label).to.equal(causeName);
      expect(error.message, label).to.contain(mention);
    }
    expect(decodeInit(encodeHandshakeMessage(init))).to.deep.equal(init);
  });

  it("refuses a ChannelOpenTry whose ML-KEM ciphertext is not 1088 bytes", () => {
    const json = { ...(tryMessage as Record<string, unknown>), responder: provider.address.toLowerCase() };
    const error = thrown(() => decodeTry(bytesOf({ ...json, mlkemCiphertext: `0x${"00".repeat(1087)}` })));
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain("ChannelOpenTry.mlkemCiphertext").and.to.contain("1088 bytes");
    expect(decodeTry(encodeHandshakeMessage(tryMessage))).to.deep.equal(tryMessage);
  });

  it("refuses invalid ephemeral keys: a low-order X25519 point, an out-of-range ML-KEM key", async () => {
    const lowOrder = await rejection(createTry({ account: provider, init: { ...init, x25519PublicKey: `0x${"00".repeat(32)}` } }));
    expectTyped(lowOrder, "HandshakeError");
    expect(lowOrder.message).to.contain("X25519");
    const badKem = await rejection(createTry({ account: provider, init: { ...init, mlkemEncapsulationKey: `0x${"ff".repeat(1184)}` } }));
    expectTyped(badKem, "HandshakeError");
    expect(badKem.message).to.contain("ML-KEM-768");
  });

  it("names the claimed and the actual signer of an Init, and the expected and actual signer of a Try", async () => {
    const { init: forged } = await createInit({ account: stranger, sessionId: SESSION });
    const claimed = { ...forged, initiator: payer.address };
    const error = await rejection(verifyInit({ ...claimed, signature: await signDigest(stranger, initDigest(claimed)) }));
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain(payer.address).and.to.contain(stranger.address);

    const { init: fresh, secrets } = await createInit({ account: payer, sessionId: SESSION });
    const { tryMessage: answer } = await createTry({ account: provider, init: fresh });
    const wrongPeer = await rejection(acceptTry({ init: fresh, secrets, tryMessage: answer, expectedResponder: stranger.address }));
    expectTyped(wrongPeer, "HandshakeError");
    expect(wrongPeer.message).to.contain(`signed by ${provider.address}`).and.to.contain(`expected the responder ${stranger.address}`);
  });
});

describe("transport: secure connections over TCP", function () {
  this.timeout(20_000);
  afterEach(closeAll);

  it("opens an authenticated channel and carries 1,000 messages each way, exact and in order", async () => {
    const authorized: Array<[Hex, Address]> = [];
    const server = await listen({
      authorize: async (sessionId, initiator) => {
        authorized.push([sessionId, initiator]);
        return payerOnly(sessionId, initiator);
      },
    });
    const { client, remote } = await pair(server);
    expect(authorized).to.deep.equal([[SESSION, payer.address]]);
    expect([client.role, client.peer, client.sessionId]).to.deep.equal(["initiator", provider.address, SESSION]);
    expect([remote.role, remote.peer, remote.sessionId]).to.deep.equal(["responder", payer.address, SESSION]);
    expect(client.transcriptHash).to.equal(remote.transcriptHash);
    expect(client.state).to.equal("open");

    const N = 1000;
    const toProvider = Array.from({ length: N }, (_, i) => message("payer", i));
    const toPayer = Array.from({ length: N }, (_, i) => message("provider", i));
    const atProvider = nextMessages(remote, N);
    const atPayer = nextMessages(client, N);
    await Promise.all([
      (async () => {
        for (const m of toProvider) await client.send(m);
      })(),
      (async () => {
        for (const m of toPayer) await remote.send(m);
      })(),
    ]);
    expect((await atProvider).map(hex)).to.deep.equal(toProvider.map(hex));
    expect((await atPayer).map(hex)).to.deep.equal(toPayer.map(hex));

    // Graceful close: both ends close without an error, and nothing more can be sent.
    await client.close();
    expect(await remote.closed).to.equal(undefined);
    expect(await client.closed).to.equal(undefined);
    expect(client.state).to.equal("closed");
    expectTyped(await rejection(client.send(text("late"))), "ConnectionClosedError");
  });

  it("delivers a burst in slices of at most MESSAGES_PER_TURN per turn of the event loop, in order, so the handlers' own work gets a turn between them", async () => {
    const server = await listen();
    const { client, remote } = await pair(server);
    const N = 100;
    const sent = Array.from({ length: N }, (_, i) => message("payer", i));
    // A check-phase callback that reschedules itself marks the turns: what is delivered between two of its runs
    // was delivered in one turn.
    const slices: number[] = [];
    const received: Uint8Array[] = [];
    let current = 0;
    let done = false;
    const tick = () => {
      slices.push(current);
      current = 0;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const all = new Promise<void>((resolve) => {
      remote.on("message", (data) => {
        current++;
        received.push(data);
        if (received.length === N) {
          done = true;
          resolve();
        }
      });
    });
    // One burst: every send in the same turn, so the frames leave in one corked write.
    await Promise.all(sent.map((m) => client.send(m)));
    await all;
    await new Promise((resolve) => setImmediate(resolve));
    slices.push(current);
    expect(received.map(hex)).to.deep.equal(sent.map(hex));
    expect(slices.reduce((a, b) => a + b, 0)).to.equal(N);
    expect(Math.max(...slices)).to.be.at.most(MESSAGES_PER_TURN);
    expect(slices.filter((n) => n > 0).length).to.be.at.least(Math.ceil(N / MESSAGES_PER_TURN));
  });

  it("carries messages of 1 byte, 0 bytes and the maximum size, and refuses one byte more without closing", async () => {
    const server = await listen();
    const { client, remote } = await pair(server);
    const big = new Uint8Array(MAX_MESSAGE_BYTES);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 13)) & 0xff;
    const atProvider = nextMessages(remote, 3);
    const atPayer = nextMessages(client, 2);
    await client.send(new Uint8Array([0x2a]));
    await client.send(new Uint8Array(0));
    await client.send(big);
    await remote.send(big);
    await remote.send(new Uint8Array([0x01]));
    const [one, empty, large] = await atProvider;
    expect(hex(one!)).to.equal("0x2a");
    expect(empty!.length).to.equal(0);
    expect(Buffer.compare(large!, big)).to.equal(0);
    const [back, last] = await atPayer;
    expect(Buffer.compare(back!, big)).to.equal(0);
    expect(hex(last!)).to.equal("0x01");

    const tooBig = await rejection(client.send(new Uint8Array(MAX_MESSAGE_BYTES + 1)));
    expectTyped(tooBig, "SizeLimitError");
    expect(client.state).to.equal("open");
    const after = nextMessages(remote, 1);
    await client.send(text("still open"));
    expect(hex((await after)[0]!)).to.equal(hex(text("still open")));
  });

  it("closes on a tampered ciphertext byte with FrameAuthenticationError and delivers nothing tampered", async () => {
    const server = await listen();
    // Client → server frames: 0 Init, 1 Ack, 2 "m0" (counter 1), 3 "m1" (counter 2), 4 "m2". Version 1
    // seals each message alone, however close together they are sent (batches: the test further down).
    const port = await proxy(server.port, (direction, index, frame) => {
      if (direction !== "toServer" || index !== 3) return [frame];
      const tampered = frame.slice();
      tampered[8 + 2]! ^= 0x80; // inside the ciphertext, past the clear counter
      return [tampered];
    });
    const accepted = once(server, "connection") as Promise<[SecureConnection]>;
    const client = await connect(port, { handshakeVersion: "1" });
    const [remote] = await accepted;
    cleanups.push(() => remote.destroy());
    const { messages: received } = collect(remote);
    const errors: TransportError[] = [];
    remote.on("error", (error) => errors.push(error));

    for (const m of ["m0", "m1", "m2"]) await client.send(text(m));
    const closedWith = (await remote.closed) as FrameAuthenticationError;
    expectTyped(closedWith, "FrameAuthenticationError");
    expect(closedWith.counter).to.equal(2n);
    expect(errors).to.deep.equal([closedWith]); // emitted exactly once
    expect(received.map(hex)).to.deep.equal([hex(text("m0"))]);
    expect(remote.state).to.equal("closed");
    // The sender sees its connection cut, not a graceful close.
    expectTyped(await client.closed, "ConnectionClosedError");
  });

  it("closes on a replayed or a dropped frame with FrameReplayError (without an error listener, without crashing)", async () => {
    const server = await listen();
    for (const [mode, expectedCounter, receivedCounter, delivered] of [
      ["replay", 2n, 1n, ["m0"]],
      ["drop", 1n, 2n, []],
    ] as const) {
      const port = await proxy(server.port, (direction, index, frame) => {
        if (direction !== "toServer" || index !== 2) return [frame];
        return mode === "replay" ? [frame, frame] : [];
      });
      const accepted = once(server, "connection") as Promise<[SecureConnection]>;
      const client = await connect(port, { handshakeVersion: "1" });
      const [remote] = await accepted;
      cleanups.push(() => remote.destroy());
      const { messages: received } = collect(remote);
      await client.send(text("m0"));
      await client.send(text("m1"));
      const error = (await remote.closed) as FrameReplayError;
      expectTyped(error, "FrameReplayError");
      expect([error.expected, error.received], mode).to.deep.equal([expectedCounter, receivedCounter]);
      expect(received.map(hex), mode).to.deep.equal(delivered.map((m) => hex(text(m))));
    }
  });

  it("refuses an initiator that is not the channel's payer (responder side)", async () => {
    const server = await listen();
    const refused = once(server, "handshakeError") as Promise<[TransportError]>;
    const clientError = await rejection(connect(server.port, { account: stranger }));
    const [serverError] = await refused;
    expectTyped(serverError, "HandshakeError");
    expect(serverError.message).to.contain(stranger.address).and.to.contain(`is ${payer.address}`);
    expectTyped(clientError, "HandshakeError");
    expect(clientError.message).to.contain("before sending ChannelOpenTry");
    expect(server.connections.size).to.equal(0);
  });

  it("refuses an Init that claims the payer but is signed by another key, naming both", async () => {
    const server = await listen();
    const { init: forged } = await createInit({ account: stranger, sessionId: SESSION });
    const claimed = { ...forged, initiator: payer.address };
    const signed: ChannelOpenInit = { ...claimed, signature: await signDigest(stranger, initDigest(claimed)) };
    const refused = once(server, "handshakeError") as Promise<[TransportError]>;
    const socket = await rawSocket(server.port);
    socket.write(encodeFrame(encodeHandshakeMessage(signed)));
    const [error] = await refused;
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain(`from ${payer.address}`).and.to.contain(`signed by ${stranger.address}`);
    if (!socket.closed) await once(socket, "close");
  });

  it("refuses a responder that is not the expected provider (initiator side)", async () => {
    const impostor = await listen({ account: stranger });
    const serverSide = once(impostor, "handshakeError") as Promise<[TransportError]>;
    const error = await rejection(connect(impostor.port));
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain(`signed by ${stranger.address}`).and.to.contain(`expected the responder ${provider.address}`);
    const [dropped] = await serverSide;
    expectTyped(dropped, "HandshakeError");
    expect(dropped.message).to.contain("before sending ChannelOpenAck");
  });

  it("a Try whose ML-KEM ciphertext was altered in transit fails the responder's signature check", async () => {
    const server = await listen();
    const port = await proxy(server.port, (direction, index, frame) => {
      if (direction !== "toClient" || index !== 0) return [frame];
      const altered = decodeTry(frame);
      return [encodeHandshakeMessage({ ...altered, mlkemCiphertext: flipHexDigit(altered.mlkemCiphertext, 100) })];
    });
    const serverSide = once(server, "handshakeError") as Promise<[TransportError]>;
    const error = await rejection(connect(port));
    expectTyped(error, "HandshakeError");
    expect(error.message).to.contain(`expected the responder ${provider.address}`);
    expectTyped((await serverSide)[0], "HandshakeError");
  });

  it("a Try with an altered ML-KEM ciphertext but a valid signature fails key confirmation on both sides", async () => {
    // Models a broken signature check: the man in the middle holds the provider's key and re-signs the
    // altered Try. ML-KEM's implicit rejection gives the payer an unrelated secret, so the keys differ.
    const server = await listen();
    let init: ChannelOpenInit | undefined;
    const port = await proxy(server.port, async (direction, index, frame) => {
      if (direction === "toServer" && index === 0) init = decodeInit(frame);
      if (direction !== "toClient" || index !== 0) return [frame];
      const original = decodeTry(frame);
      const altered = { ...original, mlkemCiphertext: flipHexDigit(original.mlkemCiphertext, 100) };
      const signature = await signDigest(provider, transcriptHash(init!, altered));
      return [encodeHandshakeMessage({ ...altered, signature })];
    });
    const serverSide = once(server, "handshakeError") as Promise<[TransportError]>;
    const clientError = await rejection(connect(port));
    const [serverError] = await serverSide;
    expectTyped(serverError, "KeyConfirmationError");
    expect(serverError.message).to.contain("ChannelOpenAck");
    expectTyped(clientError, "KeyConfirmationError");
    expect(clientError.message).to.contain("ChannelOpenConfirm");
  });

  it("drops a connection that sends garbage and keeps accepting well-behaved clients", async () => {
    const server = await listen();
    const { init: unsignedInit } = await createInit({ account: payer, sessionId: SESSION });
    const cases: Array<[string, Uint8Array, string, string | undefined]> = [
      ["a framed non-JSON body", encodeFrame(text("hello, provider")), "HandshakeError", "InvalidJsonError"],
      ["HTTP (its first bytes read as a 1.2 GB length)", text("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "FrameTooLargeError", undefined],
      ["a framed Init with an unknown field", canonFrame({ ...initToJson(unsignedInit), hello: 1 }), "HandshakeError", "UnknownFieldError"],
    ];
    for (const [label, bytes, name, causeName] of cases) {
      const refused = once(server, "handshakeError") as Promise<[TransportError]>;
      const socket = await rawSocket(server.port);
      socket.write(bytes);
      const [error] = await refused;
      expect(error.name, label).to.equal(name);
      if (causeName) expect((error.cause as Error).name, label).to.equal(causeName);
      if (!socket.closed) await once(socket, "close");
    }
    const { client, remote } = await pair(server);
    const echoed = nextMessages(client, 1);
    remote.on("message", (data) => void remote.send(data));
    await client.send(text("ping"));
    expect(hex((await echoed)[0]!)).to.equal(hex(text("ping")));
  });

  it("drops a connection at once on an oversized length prefix, without waiting for the body", async () => {
    const server = await listen();
    const refused = once(server, "handshakeError") as Promise<[TransportError]>;
    const socket = await rawSocket(server.port);
    socket.write(new Uint8Array([0xff, 0xff, 0xff, 0xff])); // announces 4 GiB, sends nothing more
    const [error] = await refused;
    expectTyped(error, "FrameTooLargeError");
    expect([(error as FrameTooLargeError).size, (error as FrameTooLargeError).limit]).to.deep.equal([0xffff_ffff, 8192]);
    if (!socket.closed) await once(socket, "close");
    await pair(server); // still accepting
  });

  it("times out a handshake that stalls, on either side", async () => {
    const server = await listen({ timeoutMs: 300 });
    const refused = once(server, "handshakeError") as Promise<[TransportError]>;
    const silentClient = await rawSocket(server.port);
    const [error] = await refused;
    expectTyped(error, "HandshakeTimeoutError");
    expect((error as HandshakeTimeoutError).stage).to.equal("waiting for ChannelOpenInit");
    if (!silentClient.closed) await once(silentClient, "close");

    const silentSockets = new Set<net.Socket>();
    const silentServer = net.createServer((socket) => {
      silentSockets.add(socket);
      socket.on("error", () => {});
    });
    silentServer.listen(0, HOST);
    await once(silentServer, "listening");
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of silentSockets) socket.destroy();
          silentServer.close(() => resolve());
        }),
    );
    const stalled = await rejection(connect((silentServer.address() as net.AddressInfo).port, { timeoutMs: 300 }));
    expectTyped(stalled, "HandshakeTimeoutError");
    expect((stalled as HandshakeTimeoutError).stage).to.equal("waiting for ChannelOpenTry");
  });

  it("rejects with ConnectionClosedError when nothing listens on the port", async () => {
    const probe = net.createServer().listen(0, HOST);
    await once(probe, "listening");
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const error = await rejection(connect(port));
    expectTyped(error, "ConnectionClosedError");
    expect(error.message).to.contain("ECONNREFUSED");
  });

  it("reports a truncated stream (TCP closed without a sealed close) as ConnectionClosedError", async () => {
    const server = await listen();
    const { client, remote } = await pair(server);
    collect(remote);
    client.destroy();
    expectTyped(await remote.closed, "ConnectionClosedError");
    expect((await remote.closed)!.message).to.contain("without a sealed close");
  });

  it("keeps messages that arrive before a listener is attached, and emits close only after delivering them", async () => {
    const server = await listen();
    const { client, remote } = await pair(server);
    const sent = ["a", "b", "c"].map(text);
    for (const m of sent) await client.send(m);
    // The provider reads and answers the sealed close although nobody listens for its messages yet, so the
    // payer's close completes; by then the provider holds all three messages.
    await client.close();
    expect(await client.closed).to.equal(undefined);
    const events: string[] = [];
    remote.on("close", (error) => events.push(`close:${error?.name ?? "graceful"}`));
    remote.on("message", (data) => events.push(Buffer.from(data).toString()));
    expect(await remote.closed).to.equal(undefined);
    expect(events).to.deep.equal(["a", "b", "c", "close:graceful"]);
  });

  it("delivers, in order, messages the provider sends before the payer's connectSecure has resolved", async () => {
    const server = await listen();
    const greetings = Array.from({ length: 50 }, (_, i) => message("greeting", i));
    server.on("connection", (connection) => {
      cleanups.push(() => connection.destroy());
      for (const greeting of greetings) void connection.send(greeting);
    });
    const client = await connect(server.port);
    await new Promise<void>((resolve) => setImmediate(resolve)); // attach late, after a turn of the event loop
    const received = collect(client);
    await received.until(greetings.length);
    expect(received.messages.map(hex)).to.deep.equal(greetings.map(hex));
  });

  it("bounds unawaited sends with SendBufferFullError and keeps the channel usable", async () => {
    const server = await listen();
    const maxBufferedBytes = 256 * 1024;
    const { client, remote } = await connectWithLimits(server, maxBufferedBytes);
    // Nobody listens at the provider: once its inbox is full it stops reading, TCP fills up, then the
    // payer's socket buffer.
    const chunk = new Uint8Array(64 * 1024).fill(3);
    const sends: Array<Promise<void>> = [];
    let refusal: Error | undefined;
    for (let i = 0; i < 2000 && !refusal; i++) {
      const sent = client.send(chunk);
      sent.catch((error: Error) => (refusal ??= error));
      sends.push(sent);
      await Promise.resolve(); // a refusal is decided synchronously; let its handler run
    }
    expectTyped(refusal, "SendBufferFullError");
    expect((refusal as SendBufferFullError).limit).to.equal(maxBufferedBytes);
    expect(client.state).to.equal("open");

    const received = collect(remote);
    const outcomes = await Promise.allSettled(sends);
    const accepted = outcomes.filter((outcome) => outcome.status === "fulfilled").length;
    expect(accepted).to.equal(sends.length - 1);
    // The refused message consumed no counter: the next one is accepted and arrives right after the others.
    await client.send(text("after"));
    await received.until(accepted + 1);
    expect(received.messages.length).to.equal(accepted + 1);
    expect(received.messages.slice(0, accepted).every((m) => m.length === chunk.length && m[0] === 3)).to.equal(true);
    expect(hex(received.messages[accepted]!)).to.equal(hex(text("after")));
  });

  it("closes open connections gracefully when the server closes", async () => {
    const server = await listen();
    const { client } = await pair(server);
    collect(client);
    await server.close();
    expect(await client.closed).to.equal(undefined);
  });

  it("gives every typed error a literal name equal to its class name", () => {
    const errors: Array<[BaseError, string]> = [
      [new FrameTooLargeError(10, 5), "FrameTooLargeError"],
      [new MalformedFrameError("x"), "MalformedFrameError"],
      [new FrameAuthenticationError(1n), "FrameAuthenticationError"],
      [new FrameReplayError(2n, 1n), "FrameReplayError"],
      [new HandshakeError("x"), "HandshakeError"],
      [new KeyConfirmationError("x"), "KeyConfirmationError"],
      [new HandshakeTimeoutError(10, "waiting"), "HandshakeTimeoutError"],
      [new ConnectionClosedError("x"), "ConnectionClosedError"],
      [new SendBufferFullError(2, 1), "SendBufferFullError"],
    ];
    for (const [error, name] of errors) {
      expect(error.name).to.equal(name);
      expect(error.constructor.name).to.equal(name);
      expect(error).to.be.instanceOf(BaseError);
    }
  });
});

function without(object: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...object };
  delete copy[key];
  return copy;
}

function canonFrame(value: unknown): Uint8Array {
  return encodeFrame(canonBytes(value));
}

/** A second payer connection with a small send buffer, and its provider end (no listener attached). */
async function connectWithLimits(server: SecureServer, maxBufferedBytes: number) {
  const accepted = once(server, "connection") as Promise<[SecureConnection]>;
  const client = await connectSecure({
    host: HOST,
    port: server.port,
    account: payer,
    sessionId: SESSION,
    expectedPeer: provider.address,
    maxMessageBytes: 64 * 1024,
    maxBufferedBytes,
  });
  cleanups.push(() => client.destroy());
  const [remote] = await accepted;
  cleanups.push(() => remote.destroy());
  return { client, remote };
}

/** A payer that runs the handshake by hand over a raw socket, so that it can seal any record it likes. */
async function handmadePayer(port: number, version: HandshakeVersion) {
  const socket = await rawSocket(port);
  const decoder = new FrameDecoder({ maxFrameBytes: 2 * DEFAULT_MAX_FRAME_BYTES });
  const frames: Uint8Array[] = [];
  let wake: (() => void) | undefined;
  socket.on("data", (chunk: Buffer) => {
    frames.push(...decoder.push(chunk));
    wake?.();
  });
  const next = async () => {
    while (frames.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return frames.shift()!;
  };
  const { init, secrets } = await createInit({ account: payer, sessionId: SESSION, version });
  socket.write(encodeFrame(encodeHandshakeMessage(init)));
  const tryMessage = decodeTry(await next());
  const { keys, transcriptHash: transcript } = await acceptTry({ init, secrets, tryMessage, expectedResponder: provider.address });
  const sealer = new RecordSealer(keys.initiatorToResponder);
  socket.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", transcript))));
  await next(); // ChannelOpenConfirm
  return { send: (type: RecordType, payload: Uint8Array) => socket.write(encodeFrame(sealer.seal(type, payload))) };
}

describe("transport: data batches (handshake version 2)", () => {
  afterEach(closeAll);

  it("seals a burst as one data-batch record and delivers each message, in order, exactly as sent", async () => {
    const { client, remote } = await pair(await listen());
    expect([client.handshakeVersion, remote.handshakeVersion]).to.deep.equal(["2", "2"]);
    const { messages, until } = collect(remote);
    const sent = Array.from({ length: 100 }, (_, i) => (i === 50 ? new Uint8Array(0) : message("burst", i)));
    const before = client.recordsSent;
    await Promise.all(sent.map((m) => client.send(m)));
    await until(100);
    expect(messages.map(hex)).to.deep.equal(sent.map(hex));
    expect(client.recordsSent - before).to.equal(1);
    expect(remote.recordsReceived).to.equal(client.recordsSent);
    // A message alone in its turn travels as a plain data record: one record, one encoding.
    await client.send(text("alone"));
    await until(101);
    expect(hex(messages[100]!)).to.equal(hex(text("alone")));
    expect(client.recordsSent - before).to.equal(2);
  });

  it("splits a burst where a batch would pass MAX_BATCH_PAYLOAD_BYTES; a message that fills a batch alone is a record of its own", async () => {
    const { client, remote } = await pair(await listen());
    const { messages, until } = collect(remote);
    const sent = [text("a"), fill(40_000, 1), fill(40_000, 2), text("b"), fill(MAX_BATCH_PAYLOAD_BYTES, 3), text("c"), text("d")];
    const before = client.recordsSent;
    await Promise.all(sent.map((m) => client.send(m)));
    await until(sent.length);
    expect(messages.map(hex)).to.deep.equal(sent.map(hex));
    // [a, 40 kB] · [40 kB, b] · [64 KiB] · [c, d]
    expect(client.recordsSent - before).to.equal(4);
  });

  it("closes on a tampered batch record with FrameAuthenticationError and delivers none of its messages", async () => {
    const server = await listen();
    // Client → server frames: 0 Init, 1 Ack, 2 "m0" alone (counter 1), 3 the batch ["m1", "m2"] (counter 2).
    const port = await proxy(server.port, (direction, index, frame) => {
      if (direction !== "toServer" || index !== 3) return [frame];
      const tampered = frame.slice();
      tampered[tampered.length - 20]! ^= 0x01; // inside the ciphertext
      return [tampered];
    });
    const accepted = once(server, "connection") as Promise<[SecureConnection]>;
    const client = await connect(port);
    const [remote] = await accepted;
    cleanups.push(() => remote.destroy());
    const { messages } = collect(remote);
    await client.send(text("m0"));
    await new Promise((resolve) => setImmediate(resolve)); // ends the burst
    await Promise.all([client.send(text("m1")), client.send(text("m2"))]);
    const closedWith = await remote.closed;
    expectTyped(closedWith, "FrameAuthenticationError");
    expect(messages.map(hex)).to.deep.equal([hex(text("m0"))]);
  });

  it("seals each message alone with a payer that offers version 1, and both ends agree on it", async () => {
    const server = await listen();
    const accepted = once(server, "connection") as Promise<[SecureConnection]>;
    const client = await connectSecure({ host: HOST, port: server.port, account: payer, sessionId: SESSION, expectedPeer: provider.address, handshakeVersion: "1" });
    cleanups.push(() => client.destroy());
    const [remote] = await accepted;
    cleanups.push(() => remote.destroy());
    expect([client.handshakeVersion, remote.handshakeVersion]).to.deep.equal(["1", "1"]);
    const { messages, until } = collect(remote);
    const sent = Array.from({ length: 10 }, (_, i) => message("v1", i));
    const before = client.recordsSent;
    await Promise.all(sent.map((m) => client.send(m)));
    await until(10);
    expect(messages.map(hex)).to.deep.equal(sent.map(hex));
    expect(client.recordsSent - before).to.equal(10);
  });

  it("closes on a malformed data batch without delivering any of its messages, and on any batch at version 1", async () => {
    const server = await listen();
    const two = encodeDataBatch([text("a"), text("b")]);
    const tooLong = Buffer.alloc(4);
    tooLong.writeUInt32BE(MAX_MESSAGE_BYTES + 1);
    const cases: Array<[string, HandshakeVersion, Uint8Array]> = [
      ["one message", "2", Buffer.from([0, 0, 0, 1, 0x61])],
      ["no message", "2", new Uint8Array(0)],
      ["a length cut short", "2", Buffer.concat([two, Buffer.from([0, 0])])],
      ["a length past the end", "2", Buffer.concat([two, Buffer.from([0, 0, 0, 9, 1, 2])])],
      ["a message above maxMessageBytes", "2", Buffer.concat([two, tooLong])],
      ["a batch above MAX_BATCH_PAYLOAD_BYTES", "2", encodeDataBatch([fill(40_000, 1), fill(40_000, 2)])],
      ["16,385 empty messages", "2", new Uint8Array(4 * 16_385)],
      ["a well-formed batch at version 1", "1", two],
    ];
    for (const [what, version, payload] of cases) {
      const accepted = once(server, "connection") as Promise<[SecureConnection]>;
      const peer = await handmadePayer(server.port, version);
      const [remote] = await accepted;
      cleanups.push(() => remote.destroy());
      const { messages } = collect(remote);
      peer.send(RecordType.data, text("before"));
      peer.send(RecordType.dataBatch, payload);
      peer.send(RecordType.data, text("after"));
      const error = await remote.closed;
      expectTyped(error, "MalformedFrameError");
      expect(messages.map(hex), what).to.deep.equal([hex(text("before"))]);
    }
  });
});
