/**
 * The initiator: {@link connectSecure} dials a provider, runs the handshake and returns the open
 * {@link SecureConnection}. The protocol is `handshake.ts`; the connection, `secure-connection.ts`.
 */

import * as net from "node:net";
import { isAddress } from "viem";

import { InvalidFieldError } from "../core/errors";
import { expectHash, expectLiteral } from "../core/validate";
import { HandshakeIo, openKeyConfirmation, runHandshake } from "./handshake-io";
import { SecureConnection, validateOptions, type ConnectSecureParameters } from "./secure-connection";
import {
  ConnectionClosedError,
  HandshakeError,
  HandshakeTimeoutError,
  KeyConfirmationError,
} from "./errors";
import { encodeFrame, FrameDecoder } from "./frames";
import {
  acceptTry,
  createInit,
  decodeTry,
  encodeHandshakeMessage,
  encodeKeyConfirmation,
  HANDSHAKE_VERSION,
  HANDSHAKE_VERSIONS,
  MAX_HANDSHAKE_MESSAGE_BYTES,
} from "./handshake";
import {
  RecordOpener,
  RecordSealer,
  RecordType,
  SEALED_FRAME_OVERHEAD,
} from "./sealing";


// --- Initiator -------------------------------------------------------------------------------------------

/**
 * Connects to a provider and runs the handshake as initiator. Resolves with an open connection once the
 * provider has proved it holds `expectedPeer`'s key and the session keys (ChannelOpenConfirm). Rejects with
 * {@link HandshakeError}, {@link KeyConfirmationError}, {@link HandshakeTimeoutError},
 * {@link FrameTooLargeError} or {@link ConnectionClosedError} (could not connect); the socket is then closed.
 */
export async function connectSecure(parameters: ConnectSecureParameters): Promise<SecureConnection> {
  const { host, port, account } = parameters;
  const options = validateOptions(parameters);
  const sessionId = expectHash(parameters.sessionId, "sessionId");
  if (!isAddress(parameters.expectedPeer, { strict: false })) {
    throw new InvalidFieldError("expectedPeer", "the provider's address", parameters.expectedPeer);
  }
  const expectedPeer = parameters.expectedPeer;
  const version = expectLiteral(parameters.handshakeVersion ?? HANDSHAKE_VERSION, "handshakeVersion", HANDSHAKE_VERSIONS);
  const decoder = new FrameDecoder({ maxFrameBytes: MAX_HANDSHAKE_MESSAGE_BYTES });
  const socket = net.connect({ host, port, ...(parameters.localAddress ? { localAddress: parameters.localAddress } : {}) });
  socket.setNoDelay(true);
  const io = new HandshakeIo(socket, decoder, "connecting");

  const opened = await runHandshake(io, options.timeoutMs, async () => {
    if (socket.connecting) await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    io.stage = "sending ChannelOpenInit";
    const { init, secrets } = await createInit({ account, sessionId, version });
    io.write(encodeFrame(encodeHandshakeMessage(init)));

    io.stage = "waiting for ChannelOpenTry";
    const tryFrame = await io.read(
      () =>
        new HandshakeError(
          "The responder closed the connection before sending ChannelOpenTry: it refused this initiator or session.",
        ),
    );
    const tryMessage = decodeTry(tryFrame);
    const { keys, transcriptHash } = await acceptTry({ init, secrets, tryMessage, expectedResponder: expectedPeer });
    // The responder has proved its identity over this transcript: full-size frames may follow its Confirm.
    decoder.maxFrameBytes = options.maxMessageBytes + SEALED_FRAME_OVERHEAD;
    const sealer = new RecordSealer(keys.initiatorToResponder);
    const opener = new RecordOpener(keys.responderToInitiator);
    io.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", transcriptHash))));

    io.stage = "waiting for ChannelOpenConfirm";
    const confirmFrame = await io.read(
      () =>
        new KeyConfirmationError(
          "The responder closed the connection instead of sending ChannelOpenConfirm: it could not open our " +
            "ChannelOpenAck, so the two sides derived different keys.",
        ),
    );
    openKeyConfirmation(opener, confirmFrame, "ChannelOpenConfirm", transcriptHash);
    return { sealer, opener, transcriptHash, peer: tryMessage.responder, version: tryMessage.version };
  });

  const { frames, eof } = io.detach();
  return new SecureConnection({
    ...opened,
    ...options,
    socket,
    decoder,
    frames,
    eof,
    role: "initiator",
    sessionId,
  });
}
