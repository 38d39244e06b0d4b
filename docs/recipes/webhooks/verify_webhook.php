<?php
// Check one ReceiptVerify webhook delivery: its ReceiptVerify-Signature over the raw body, at most 5 minutes old.
// PHP 7.1+, no extensions beyond the default (hash, json). Usage: php verify_webhook.php SECRET HEADERS_FILE BODY_FILE,
// where SECRET is the endpoint's secret as `webhooks add` printed it (`whsec_…`, all of it is the key), HEADERS_FILE
// holds the request's headers as `Name: value` lines and BODY_FILE its body, byte for byte. Prints
// `valid EVENT_ID EVENT_TYPE` and exits 0, or prints why not and exits 1 (docs/webhooks.md, "Checking a delivery").
// In a web handler the raw body is file_get_contents('php://input'), the header
// $_SERVER['HTTP_RECEIPTVERIFY_SIGNATURE'].

const TOLERANCE = 300; // seconds between the signature's timestamp and our clock, either way

// Throws unless $signatureHeader (t=…,v1=…) signs $body (the raw bytes) with $secret within the tolerance.
function verify_signature(string $secret, string $signatureHeader, string $body, int $now): void
{
    $timestamp = null;
    $signatures = [];
    foreach (explode(',', $signatureHeader) as $part) {
        $pair = explode('=', $part, 2);
        if (count($pair) !== 2) {
            continue;
        }
        [$key, $value] = array_map('trim', $pair);
        if ($key === 't' && preg_match('/^[0-9]{1,15}$/', $value)) {
            $timestamp = (int) $value;
        } elseif ($key === 'v1') {
            $signatures[] = $value;
        }
    }
    if ($timestamp === null || !$signatures) {
        throw new RuntimeException('the signature header has no t= or no v1=');
    }
    if (abs($now - $timestamp) > TOLERANCE) {
        throw new RuntimeException(
            sprintf('the timestamp is %d s from our clock (more than %d)', $now - $timestamp, TOLERANCE));
    }
    $expected = hash_hmac('sha256', $timestamp . '.' . $body, $secret);
    foreach ($signatures as $candidate) {
        if (hash_equals($expected, $candidate)) { // constant time
            return;
        }
    }
    throw new RuntimeException('the signature does not match (wrong secret, or the body was changed)');
}

function header_value(string $lines, string $name): ?string
{
    foreach (preg_split('/\r?\n/', $lines) as $line) {
        $pair = explode(':', $line, 2);
        if (count($pair) === 2 && strcasecmp(trim($pair[0]), $name) === 0) {
            return trim($pair[1]);
        }
    }
    return null;
}

if ($argc !== 4) {
    fwrite(STDERR, "usage: php verify_webhook.php SECRET HEADERS_FILE BODY_FILE\n");
    exit(2);
}
[, $secret, $headersFile, $bodyFile] = $argv;
$signatureHeader = header_value(file_get_contents($headersFile), 'ReceiptVerify-Signature');
$body = file_get_contents($bodyFile); // the raw bytes, as received
if ($signatureHeader === null) {
    echo "invalid: no ReceiptVerify-Signature header\n";
    exit(1);
}
try {
    verify_signature($secret, $signatureHeader, $body, time());
} catch (RuntimeException $error) {
    echo 'invalid: ', $error->getMessage(), "\n";
    exit(1);
}
$event = json_decode($body, true); // only now is the body trusted; deduplicate by $event['id']
echo 'valid ', $event['id'], ' ', $event['type'], "\n";
exit(0);
