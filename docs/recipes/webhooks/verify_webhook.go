// Check one ReceiptVerify webhook delivery: its ReceiptVerify-Signature over the raw body, at most 5 minutes old.
// Go 1.16+, standard library only. Usage: go run verify_webhook.go SECRET HEADERS_FILE BODY_FILE, where SECRET is the
// endpoint's secret as `webhooks add` printed it (`whsec_…`, all of it is the key), HEADERS_FILE holds the request's
// headers as `Name: value` lines and BODY_FILE its body, byte for byte. Prints `valid EVENT_ID EVENT_TYPE` and exits
// 0, or prints why not and exits 1 (docs/webhooks.md, "Checking a delivery").
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// tolerance is the most seconds between the signature's timestamp and our clock, either way.
const tolerance = 300

var digits = regexp.MustCompile(`^[0-9]{1,15}$`)

// verify fails unless signatureHeader (t=…,v1=…) signs body (the raw bytes) with secret within the tolerance.
func verify(secret, signatureHeader string, body []byte, now time.Time) error {
	timestamp := int64(-1)
	var signatures []string
	for _, part := range strings.Split(signatureHeader, ",") {
		pair := strings.SplitN(part, "=", 2)
		if len(pair) != 2 {
			continue
		}
		key, value := strings.TrimSpace(pair[0]), strings.TrimSpace(pair[1])
		if key == "t" && digits.MatchString(value) {
			timestamp, _ = strconv.ParseInt(value, 10, 64)
		} else if key == "v1" {
			signatures = append(signatures, value)
		}
	}
	if timestamp < 0 || len(signatures) == 0 {
		return errors.New("the signature header has no t= or no v1=")
	}
	if age := now.Unix() - timestamp; age > tolerance || age < -tolerance {
		return fmt.Errorf("the timestamp is %d s from our clock (more than %d)", age, tolerance)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	expected := []byte(hex.EncodeToString(mac.Sum(nil)))
	for _, candidate := range signatures {
		if hmac.Equal(expected, []byte(candidate)) { // constant time
			return nil
		}
	}
	return errors.New("the signature does not match (wrong secret, or the body was changed)")
}

func header(lines, name string) (string, bool) {
	for _, line := range strings.Split(lines, "\n") {
		pair := strings.SplitN(line, ":", 2)
		if len(pair) == 2 && strings.EqualFold(strings.TrimSpace(pair[0]), name) {
			return strings.TrimSpace(pair[1]), true
		}
	}
	return "", false
}

func run(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run verify_webhook.go SECRET HEADERS_FILE BODY_FILE")
		return 2
	}
	headers, err := os.ReadFile(args[1])
	if err != nil {
		fmt.Println("invalid:", err)
		return 1
	}
	body, err := os.ReadFile(args[2]) // the raw bytes, as received
	if err != nil {
		fmt.Println("invalid:", err)
		return 1
	}
	signatureHeader, found := header(string(headers), "ReceiptVerify-Signature")
	if !found {
		fmt.Println("invalid: no ReceiptVerify-Signature header")
		return 1
	}
	if err := verify(args[0], signatureHeader, body, time.Now()); err != nil {
		fmt.Println("invalid:", err)
		return 1
	}
	// Only now is the body trusted; deduplicate by its id.
	var event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &event); err != nil {
		fmt.Println("invalid: the body is not JSON:", err)
		return 1
	}
	fmt.Printf("valid %s %s\n", event.ID, event.Type)
	return 0
}

func main() { os.Exit(run(os.Args[1:])) }
