// Verify a receipt with ReceiptVerify from an app backend: /api, then /apiencrypted for a CBC and a GCM app.
// JDK 11+, no dependencies: `java Verify.java`. Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CBC,
// RV_TOKEN_GCM, RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class Verify {
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    // body: nonce[16] ‖ ciphertext ‖ tag[16]; doFinal throws AEADBadTagException if the answer was modified.
    static String openGcm(String body, byte[] key) throws Exception {
        byte[] data = Base64.getDecoder().decode(body);
        Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
        cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, data, 0, 16));
        return new String(cipher.doFinal(data, 16, data.length - 16), StandardCharsets.UTF_8);
    }

    // body: IV[16] ‖ ciphertext; Java calls PKCS#7 padding of 16-byte blocks "PKCS5Padding".
    static String openCbc(String body, byte[] key) throws Exception {
        byte[] data = Base64.getDecoder().decode(body);
        Cipher cipher = Cipher.getInstance("AES/CBC/PKCS5Padding");
        cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new IvParameterSpec(data, 0, 16));
        return new String(cipher.doFinal(data, 16, data.length - 16), StandardCharsets.UTF_8);
    }

    interface Opener { String open(String body, byte[] key) throws Exception; }

    // The JDK has no JSON parser: these find the two top-level fields checked here (`status` comes first).
    // Use Jackson or Gson in real code.
    static final Pattern STATUS = Pattern.compile("\"status\"\\s*:\\s*(-?\\d+)");
    static final Pattern NONCE = Pattern.compile("\"nonce\"\\s*:\\s*\"([^\"]*)\"");

    static String find(Pattern pattern, String json) {
        Matcher m = pattern.matcher(json);
        return m.find() ? m.group(1) : null;
    }

    static boolean verify(String label, String path, String token, String receipt, Opener opener, String key) {
        byte[] random = new byte[16];
        new SecureRandom().nextBytes(random);
        String nonce = String.format("%032x", new java.math.BigInteger(1, random));
        Map<String, String> form = new LinkedHashMap<>();
        form.put("apikey", System.getenv("RV_KEY"));
        form.put("token", token);
        form.put("receipt", receipt);
        form.put("nonce", nonce);
        String encoded = form.entrySet().stream()
            .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
            .collect(Collectors.joining("&"));
        try {
            HttpRequest request = HttpRequest.newBuilder(URI.create(System.getenv("RV_URL").replaceAll("/$", "") + path))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(encoded)).build();
            HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            // A successful /apiencrypted answer is text/plain base64; every other answer is plain JSON.
            boolean encrypted = opener != null
                && response.headers().firstValue("Content-Type").orElse("").startsWith("text/plain");
            String json = encrypted ? opener.open(response.body(), Base64.getDecoder().decode(key)) : response.body();
            String status = find(STATUS, json);
            boolean nonceEchoed = nonce.equals(find(NONCE, json));
            boolean ok = "0".equals(status) && nonceEchoed;
            System.out.println((ok ? "ok   " : "FAIL ") + label + ": status " + status + ", nonce "
                + (nonceEchoed ? "echoed" : "MISMATCH"));
            return ok;
        } catch (Exception e) {          // network or decryption failure
            System.out.println("FAIL " + label + ": " + e);
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        String receipt = Files.readString(Path.of(System.getenv("RV_RECEIPT"))).strip();
        boolean ok = verify("/api", "/api", System.getenv("RV_TOKEN_CBC"), receipt, null, null);
        ok &= verify("/apiencrypted aes-256-cbc", "/apiencrypted", System.getenv("RV_TOKEN_CBC"), receipt,
            Verify::openCbc, System.getenv("RV_RESULT_KEY_CBC"));
        ok &= verify("/apiencrypted aes-256-gcm", "/apiencrypted", System.getenv("RV_TOKEN_GCM"), receipt,
            Verify::openGcm, System.getenv("RV_RESULT_KEY_GCM"));
        System.exit(ok ? 0 : 1);
    }
}
