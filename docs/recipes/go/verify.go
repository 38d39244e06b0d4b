// Verify a receipt with ReceiptVerify from an app backend: /api, then /apiencrypted for a CBC and a GCM app.
// Go 1.16+, standard library only: `go run verify.go`. Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CBC,
// RV_TOKEN_GCM, RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// openGCM decrypts nonce[16] ‖ ciphertext ‖ tag[16]; it fails if the answer was modified.
func openGCM(body string, key []byte) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, 16)
	if err != nil {
		return nil, err
	}
	if len(data) < 32 {
		return nil, errors.New("answer too short")
	}
	return gcm.Open(nil, data[:16], data[16:], nil)
}

// openCBC decrypts IV[16] ‖ AES-256-CBC(json, PKCS#7 padding).
func openCBC(body string, key []byte) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(data) < 32 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("answer is not IV + whole blocks")
	}
	plain := make([]byte, len(data)-16)
	cipher.NewCBCDecrypter(block, data[:16]).CryptBlocks(plain, data[16:])
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > aes.BlockSize || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("bad padding (wrong key?)")
	}
	return plain[:len(plain)-pad], nil
}

type answer struct {
	Status *int   `json:"status"`
	Nonce  string `json:"nonce"`
}

type opener func(body string, key []byte) ([]byte, error)

func verify(label, path, token, receipt string, open opener, key []byte) bool {
	random := make([]byte, 16)
	if _, err := rand.Read(random); err != nil {
		panic(err)
	}
	nonce := hex.EncodeToString(random)
	a, err := call(path, token, receipt, nonce, open, key)
	if err != nil { // network, decryption or JSON failure
		fmt.Printf("FAIL %s: %v\n", label, err)
		return false
	}
	ok := a.Status != nil && *a.Status == 0 && a.Nonce == nonce
	status, echoed := "missing", "MISMATCH"
	if a.Status != nil {
		status = fmt.Sprint(*a.Status)
	}
	if a.Nonce == nonce {
		echoed = "echoed"
	}
	mark := "FAIL"
	if ok {
		mark = "ok  "
	}
	fmt.Printf("%s %s: status %s, nonce %s\n", mark, label, status, echoed)
	return ok
}

func call(path, token, receipt, nonce string, open opener, key []byte) (a answer, err error) {
	form := url.Values{"apikey": {os.Getenv("RV_KEY")}, "token": {token}, "receipt": {receipt}, "nonce": {nonce}}
	resp, err := http.PostForm(strings.TrimSuffix(os.Getenv("RV_URL"), "/")+path, form)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, err
	}
	// A successful /apiencrypted answer is text/plain base64; every other answer is plain JSON.
	if open != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		if body, err = open(string(body), key); err != nil {
			return a, err
		}
	}
	err = json.Unmarshal(body, &a)
	return a, err
}

func main() {
	file, err := os.ReadFile(os.Getenv("RV_RECEIPT"))
	if err != nil {
		fmt.Println("FAIL reading RV_RECEIPT:", err)
		os.Exit(1)
	}
	receipt := strings.TrimSpace(string(file))
	keyCBC, err1 := base64.StdEncoding.DecodeString(os.Getenv("RV_RESULT_KEY_CBC"))
	keyGCM, err2 := base64.StdEncoding.DecodeString(os.Getenv("RV_RESULT_KEY_GCM"))
	if err1 != nil || err2 != nil {
		fmt.Println("FAIL RV_RESULT_KEY_CBC and RV_RESULT_KEY_GCM must be base64")
		os.Exit(1)
	}
	ok := verify("/api", "/api", os.Getenv("RV_TOKEN_CBC"), receipt, nil, nil)
	ok = verify("/apiencrypted aes-256-cbc", "/apiencrypted", os.Getenv("RV_TOKEN_CBC"), receipt, openCBC, keyCBC) && ok
	ok = verify("/apiencrypted aes-256-gcm", "/apiencrypted", os.Getenv("RV_TOKEN_GCM"), receipt, openGCM, keyGCM) && ok
	if !ok {
		os.Exit(1)
	}
}
