<?php
// Verify a receipt with ReceiptVerify from an app backend: /api, then /apiencrypted for a CBC and a GCM app.
// PHP 7.1+ with the openssl extension; HTTP through file_get_contents (no curl needed). Inputs, from the environment:
// RV_URL, RV_KEY, RV_TOKEN_CBC, RV_TOKEN_GCM, RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).

// body: nonce[16] ‖ ciphertext ‖ tag[16]; returns false if the answer was modified.
function open_gcm(string $body, string $key)
{
    $data = base64_decode($body, true);
    return openssl_decrypt(substr($data, 16, -16), 'aes-256-gcm', $key, OPENSSL_RAW_DATA,
        substr($data, 0, 16), substr($data, -16));
}

// body: IV[16] ‖ AES-256-CBC(json, PKCS#7 padding); returns false on bad padding.
function open_cbc(string $body, string $key)
{
    $data = base64_decode($body, true);
    return openssl_decrypt(substr($data, 16), 'aes-256-cbc', $key, OPENSSL_RAW_DATA, substr($data, 0, 16));
}

function verify(string $label, string $path, string $token, string $receipt, ?callable $open = null, string $key = ''): bool
{
    $nonce = bin2hex(random_bytes(16));
    $context = stream_context_create(['http' => [
        'method' => 'POST',
        'header' => "Content-Type: application/x-www-form-urlencoded\r\n",
        'content' => http_build_query(['apikey' => getenv('RV_KEY'), 'token' => $token, 'receipt' => $receipt, 'nonce' => $nonce]),
        'ignore_errors' => true, // read the JSON body of 4xx/5xx answers too
        'timeout' => 30,
    ]]);
    $body = @file_get_contents(rtrim(getenv('RV_URL'), '/') . $path, false, $context);
    if ($body === false) {
        echo "FAIL $label: request failed: " . (error_get_last()['message'] ?? '?') . "\n";
        return false;
    }
    $headers = function_exists('http_get_last_response_headers') ? http_get_last_response_headers() : $http_response_header;
    // A successful /apiencrypted answer is text/plain base64; every other answer is plain JSON.
    if ($open !== null && preg_grep('/^Content-Type:\s*text\/plain/i', $headers)) {
        $body = $open($body, $key);
        if ($body === false) {
            echo "FAIL $label: decryption failed (wrong key or modified answer)\n";
            return false;
        }
    }
    $answer = json_decode($body, true);
    if (!is_array($answer)) {
        echo "FAIL $label: not JSON\n";
        return false;
    }
    $echoed = ($answer['nonce'] ?? null) === $nonce;
    $ok = ($answer['status'] ?? null) === 0 && $echoed;
    printf("%s %s: status %s, nonce %s\n", $ok ? 'ok  ' : 'FAIL', $label,
        var_export($answer['status'] ?? null, true), $echoed ? 'echoed' : 'MISMATCH');
    return $ok;
}

$receipt = trim(file_get_contents(getenv('RV_RECEIPT')));
$ok = verify('/api', '/api', getenv('RV_TOKEN_CBC'), $receipt);
$ok = verify('/apiencrypted aes-256-cbc', '/apiencrypted', getenv('RV_TOKEN_CBC'), $receipt,
    'open_cbc', base64_decode(getenv('RV_RESULT_KEY_CBC'))) && $ok;
$ok = verify('/apiencrypted aes-256-gcm', '/apiencrypted', getenv('RV_TOKEN_GCM'), $receipt,
    'open_gcm', base64_decode(getenv('RV_RESULT_KEY_GCM'))) && $ok;
exit($ok ? 0 : 1);
