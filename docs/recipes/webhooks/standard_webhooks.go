// A ReceiptVerify webhook receiver with the Standard Webhooks library:
//
//	go get github.com/standard-webhooks/standard-webhooks/libraries@latest
//
// The library checks webhook-id, webhook-timestamp (at most 5 minutes from our clock) and webhook-signature over the
// raw body, read whole before any JSON parsing.
package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	hook, err := standardwebhooks.NewWebhook(os.Getenv("RECEIPTVERIFY_WEBHOOK_SECRET")) // whsec_… from `webhooks add`
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || hook.Verify(body, r.Header) != nil {
			http.Error(w, "invalid signature", http.StatusBadRequest)
			return
		}
		var event struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &event) != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		log.Println("event", event.ID, event.Type) // deduplicate by event.ID: deliveries come at least once
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(":8080", nil))
}
