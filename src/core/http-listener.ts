import type { ServerOptions } from 'node:http';

/**
 * Limits every HTTP listener of Switchboard starts with (`serve`, `ui`, a worker's health server): a
 * client has 10 s to send its headers and 60 s for its whole request (its body; the answer may take as
 * long as the work does). Node's defaults (60 s and 300 s, checked every 30 s) let 300 connections that
 * trickle their headers hold the server for over a minute; the check runs every second here.
 */
export const LISTENER_OPTIONS: ServerOptions = {
  headersTimeout: 10_000,
  requestTimeout: 60_000,
  connectionsCheckingInterval: 1_000,
};
