// Check one ReceiptVerify webhook delivery: its ReceiptVerify-Signature over the raw body, at most 5 minutes old.
// JDK 11+, no dependencies. Usage: java VerifyWebhook.java SECRET HEADERS_FILE BODY_FILE, where SECRET is the
// endpoint's secret as `webhooks add` printed it (`whsec_…`, all of it is the key), HEADERS_FILE holds the request's
// headers as `Name: value` lines and BODY_FILE its body, byte for byte. Prints `valid EVENT_ID EVENT_TYPE` and exits
// 0, or prints why not and exits 1 (docs/webhooks.md, "Checking a delivery").
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class VerifyWebhook {
    static final long TOLERANCE = 300; // seconds between the signature's timestamp and our clock, either way

    // Throws unless signatureHeader (t=…,v1=…) signs body (the raw bytes) with secret within the tolerance.
    static void verify(String secret, String signatureHeader, byte[] body, long nowSeconds) throws Exception {
        Long timestamp = null;
        List<String> signatures = new ArrayList<>();
        for (String part : signatureHeader.split(",")) {
            int at = part.indexOf('=');
            if (at <= 0) continue;
            String key = part.substring(0, at).trim(), value = part.substring(at + 1).trim();
            if (key.equals("t") && value.matches("[0-9]{1,15}")) timestamp = Long.parseLong(value);
            else if (key.equals("v1")) signatures.add(value);
        }
        if (timestamp == null || signatures.isEmpty()) throw new Exception("the signature header has no t= or no v1=");
        if (Math.abs(nowSeconds - timestamp) > TOLERANCE) {
            throw new Exception("the timestamp is " + (nowSeconds - timestamp) + " s from our clock (more than "
                    + TOLERANCE + ")");
        }
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        mac.update((timestamp + ".").getBytes(StandardCharsets.UTF_8));
        byte[] expected = hex(mac.doFinal(body)).getBytes(StandardCharsets.US_ASCII);
        boolean matches = false;
        for (String candidate : signatures) { // MessageDigest.isEqual takes the same time whatever the bytes
            matches |= MessageDigest.isEqual(expected, candidate.getBytes(StandardCharsets.US_ASCII));
        }
        if (!matches) throw new Exception("the signature does not match (wrong secret, or the body was changed)");
    }

    static String hex(byte[] bytes) {
        StringBuilder text = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) text.append(String.format("%02x", b));
        return text.toString();
    }

    static String header(List<String> lines, String name) {
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
                return line.substring(colon + 1).trim();
            }
        }
        return null;
    }

    // The event's id and type. The server writes them first, in this order; a real backend reads the verified body
    // with its JSON library (Jackson, Gson, …) instead.
    static final Pattern HEAD = Pattern.compile("^\\{\"id\":\"([^\"]+)\",\"type\":\"([^\"]+)\"");

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: java VerifyWebhook.java SECRET HEADERS_FILE BODY_FILE");
            System.exit(2);
        }
        String signatureHeader = header(Files.readAllLines(Path.of(args[1]), StandardCharsets.UTF_8),
                "ReceiptVerify-Signature");
        byte[] body = Files.readAllBytes(Path.of(args[2])); // the raw bytes, as received
        if (signatureHeader == null) {
            System.out.println("invalid: no ReceiptVerify-Signature header");
            System.exit(1);
        }
        try {
            verify(args[0], signatureHeader, body, System.currentTimeMillis() / 1000);
        } catch (Exception error) {
            System.out.println("invalid: " + error.getMessage());
            System.exit(1);
        }
        // Only now is the body trusted; deduplicate by its id.
        Matcher event = HEAD.matcher(new String(body, StandardCharsets.UTF_8));
        if (!event.find()) {
            System.out.println("invalid: the body does not start with id and type");
            System.exit(1);
        }
        System.out.println("valid " + event.group(1) + " " + event.group(2));
    }
}
