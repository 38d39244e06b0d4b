#!/usr/bin/env node
// Check one ReceiptVerify webhook delivery: its ReceiptVerify-Signature over the raw body, at most 5 minutes old.
// Node 12+, no npm packages. Usage: node verify_webhook.js SECRET HEADERS_FILE BODY_FILE, where SECRET is the
// endpoint's secret as `webhooks add` printed it (`whsec_…`, all of it is the key), HEADERS_FILE holds the request's
// headers as `Name: value` lines and BODY_FILE its body, byte for byte. Prints `valid EVENT_ID EVENT_TYPE` and exits
// 0, or prints why not and exits 1 (docs/webhooks.md, "Checking a delivery").
"use strict";
const crypto = require("crypto");
const fs = require("fs");

const TOLERANCE = 300; // seconds between the signature's timestamp and our clock, either way

// Throws unless signatureHeader (t=…,v1=…) signs body (a Buffer: the raw bytes) with secret within the tolerance.
function verify(secret, signatureHeader, body, nowSeconds) {
  let timestamp = null;
  const signatures = [];
  for (const part of signatureHeader.split(",")) {
    const at = part.indexOf("=");
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (at > 0 && key === "t" && /^[0-9]{1,15}$/.test(value)) timestamp = Number(value);
    else if (at > 0 && key === "v1") signatures.push(value);
  }
  if (timestamp === null || signatures.length === 0) throw new Error("the signature header has no t= or no v1=");
  if (Math.abs(nowSeconds - timestamp) > TOLERANCE) {
    throw new Error(`the timestamp is ${Math.round(nowSeconds - timestamp)} s from our clock (more than ${TOLERANCE})`);
  }
  const expected = Buffer.from(
    crypto.createHmac("sha256", Buffer.from(secret, "utf8"))
      .update(Buffer.concat([Buffer.from(`${timestamp}.`), body]))
      .digest("hex"));
  const matches = signatures.some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && crypto.timingSafeEqual(given, expected); // constant time
  });
  if (!matches) throw new Error("the signature does not match (wrong secret, or the body was changed)");
}

function header(lines, name) {
  for (const line of lines.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name.toLowerCase()) {
      return line.slice(colon + 1).trim();
    }
  }
  return null;
}

function main(args) {
  if (args.length !== 3) {
    console.error("usage: node verify_webhook.js SECRET HEADERS_FILE BODY_FILE");
    return 2;
  }
  const [secret, headersFile, bodyFile] = args;
  const signatureHeader = header(fs.readFileSync(headersFile, "utf8"), "ReceiptVerify-Signature");
  const body = fs.readFileSync(bodyFile); // a Buffer: never JSON.stringify(JSON.parse(…)) before checking
  if (signatureHeader === null) {
    console.log("invalid: no ReceiptVerify-Signature header");
    return 1;
  }
  try {
    verify(secret, signatureHeader, body, Date.now() / 1000);
  } catch (error) {
    console.log(`invalid: ${error.message}`);
    return 1;
  }
  const event = JSON.parse(body.toString("utf8")); // only now is the body trusted; deduplicate by event.id
  console.log(`valid ${event.id} ${event.type}`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
