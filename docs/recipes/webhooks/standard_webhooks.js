// A ReceiptVerify webhook receiver with the Standard Webhooks library (npm install standardwebhooks express).
// The library checks webhook-id, webhook-timestamp (at most 5 minutes from our clock) and webhook-signature over the
// raw body; express.raw keeps the body's bytes as they arrived.
const express = require("express");
const { Webhook } = require("standardwebhooks");

const webhook = new Webhook(process.env.RECEIPTVERIFY_WEBHOOK_SECRET); // whsec_… as `webhooks add` printed it
const seen = new Set(); // use a unique key in your database: deliveries come at least once

const app = express();
app.post("/hook", express.raw({ type: "application/json" }), (req, res) => {
  let event;
  try {
    event = webhook.verify(req.body.toString("utf8"), req.headers);
  } catch (error) {
    return res.status(400).send("invalid signature");
  }
  if (!seen.has(event.id)) {
    seen.add(event.id);
    console.log("event", event.id, event.type); // answer first, do slow work from a queue
  }
  res.sendStatus(204);
});
app.listen(8080);
