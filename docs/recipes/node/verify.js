#!/usr/bin/env node
// Verify a receipt with ReceiptVerify from an app backend: /api, then /apiencrypted for a CBC and a GCM app.
// Node 18+ (built-in fetch and crypto). Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CBC, RV_TOKEN_GCM,
// RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).
"use strict";
const crypto = require("crypto");
const fs = require("fs");

function openGCM(body, key) {            // key: Buffer of 32 bytes; body: nonce[16] ‖ ciphertext ‖ tag[16]
  const data = Buffer.from(body, "base64");
  const decipher = crypto.createDecipheriv("aes-256-gcm", key, data.subarray(0, 16));
  decipher.setAuthTag(data.subarray(data.length - 16));   // final() throws if the answer was modified
  return JSON.parse(Buffer.concat([decipher.update(data.subarray(16, data.length - 16)), decipher.final()]));
}

function openCBC(body, key) {            // body: IV[16] ‖ ciphertext (PKCS#7 padding)
  const data = Buffer.from(body, "base64");
  const decipher = crypto.createDecipheriv("aes-256-cbc", key, data.subarray(0, 16));
  return JSON.parse(Buffer.concat([decipher.update(data.subarray(16)), decipher.final()]));
}

async function verify(label, path, token, receipt, open, key) {
  const nonce = crypto.randomBytes(16).toString("hex");
  try {
    const response = await fetch(process.env.RV_URL.replace(/\/$/, "") + path, {
      method: "POST",
      body: new URLSearchParams({ apikey: process.env.RV_KEY, token, receipt, nonce }),
    });
    const body = await response.text();
    // A successful /apiencrypted answer is text/plain base64; every other answer is plain JSON.
    const encrypted = open && (response.headers.get("content-type") || "").startsWith("text/plain");
    const answer = encrypted ? open(body, key) : JSON.parse(body);
    const ok = answer.status === 0 && answer.nonce === nonce;
    console.log(`${ok ? "ok  " : "FAIL"} ${label}: status ${answer.status}, nonce ${answer.nonce === nonce ? "echoed" : "MISMATCH"}`);
    return ok;
  } catch (error) {                      // network, decryption or JSON failure
    console.log(`FAIL ${label}: ${error.message}`);
    return false;
  }
}

async function main() {
  const env = process.env;
  const receipt = fs.readFileSync(env.RV_RECEIPT, "utf8").trim();
  const results = [
    await verify("/api", "/api", env.RV_TOKEN_CBC, receipt),
    await verify("/apiencrypted aes-256-cbc", "/apiencrypted", env.RV_TOKEN_CBC, receipt,
      openCBC, Buffer.from(env.RV_RESULT_KEY_CBC, "base64")),
    await verify("/apiencrypted aes-256-gcm", "/apiencrypted", env.RV_TOKEN_GCM, receipt,
      openGCM, Buffer.from(env.RV_RESULT_KEY_GCM, "base64")),
  ];
  process.exitCode = results.every(Boolean) ? 0 : 1;
}

main();
