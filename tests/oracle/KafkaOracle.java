// Kafka's own message classes as a test oracle for kcodec (tests/kafka_oracle.py compiles and runs it).
//
// One long-lived process per Kafka release, compiled with javac against that release's kafka-clients
// jar and jackson-databind. It reads one JSON request per line on stdin and answers one JSON line on
// stdout, in order:
//
//   {"op": "info"}  -> {"kafka": "<the jar's kafka-version.properties>", "classes": {"FetchRequestData": [lo, hi], ...}}
//       every generated message class of org.apache.kafka.common.message that has a JsonConverter,
//       with its LOWEST_SUPPORTED_VERSION and HIGHEST_SUPPORTED_VERSION, and "unstable": {class: [versions]},
//       the versions ApiMessageType marks unstable
//   {"op": "batch", "items": [item, ...]} -> {"results": [result, ...]}, one result per item:
//     {"op": "encode", "class": "FetchRequestData", "version": 13, "json": {...}}
//         -> {"hex": "..."}: <Class>JsonConverter.read(json, version), then the message's own
//            size(ObjectSerializationCache, version) and write(ByteBufferAccessor, cache, version)
//     {"op": "decode", "class": "FetchRequestData", "version": 13, "hex": "..."}
//         -> {"json": {...}, "remaining": n}: new <Class>(new ByteBufferAccessor(buf), version), then
//            <Class>JsonConverter.write(data, version); n = bytes left unread
//   Any failure of one item -> {"error": "<exception class>: <message>"}; a malformed line ->
//   {"error": ...} for the whole line. The process only ends when stdin closes.
//
// JsonConverter.write writes every non-null records field as an empty value (KIP-673); the answer
// replaces it with the record bytes the decoded message holds (standard base64), so records compare.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

public final class KafkaOracle {
    private static final String PACKAGE = "org.apache.kafka.common.message.";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** The reflective handles of one generated message class. */
    private static final class Codec {
        final Constructor<?> reader;
        final Method fromJson;
        final Method toJson;

        Codec(String className) throws ReflectiveOperationException {
            Class<?> data = Class.forName(PACKAGE + className);
            Class<?> converter = Class.forName(PACKAGE + className + "JsonConverter");
            reader = data.getConstructor(Readable.class, short.class);
            fromJson = converter.getMethod("read", JsonNode.class, short.class);
            toJson = converter.getMethod("write", data, short.class);
        }
    }

    private static final Map<String, Codec> CODECS = new HashMap<>();

    private static Codec codec(String className) throws ReflectiveOperationException {
        Codec found = CODECS.get(className);
        if (found == null) {
            found = new Codec(className);
            CODECS.put(className, found);
        }
        return found;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode answer;
            try {
                answer = handle(MAPPER.readTree(line));
            } catch (Throwable t) {
                answer = error(t);
            }
            out.write(MAPPER.writeValueAsString(answer));
            out.write('\n');
            out.flush();
        }
    }

    private static JsonNode handle(JsonNode request) throws Exception {
        String op = request.path("op").asText();
        switch (op) {
            case "info":
                return info();
            case "batch": {
                ObjectNode answer = MAPPER.createObjectNode();
                ArrayNode results = answer.putArray("results");
                for (JsonNode item : request.path("items")) {
                    JsonNode result;
                    try {
                        result = item(item);
                    } catch (Throwable t) {
                        result = error(t);
                    }
                    results.add(result);
                }
                return answer;
            }
            default:
                return item(request);
        }
    }

    private static JsonNode item(JsonNode item) throws Exception {
        String op = item.path("op").asText();
        Codec codec = codec(item.path("class").asText());
        short version = (short) item.path("version").asInt();
        ObjectNode result = MAPPER.createObjectNode();
        if (op.equals("encode")) {
            Message message = (Message) invoke(codec.fromJson, null, item.get("json"), version);
            ObjectSerializationCache cache = new ObjectSerializationCache();
            int size = message.size(cache, version);
            ByteBuffer buffer = ByteBuffer.allocate(size);
            message.write(new ByteBufferAccessor(buffer), cache, version);
            if (buffer.position() != size) {
                throw new IllegalStateException("size() said " + size + ", write() wrote " + buffer.position());
            }
            result.put("hex", hex(buffer.array()));
        } else if (op.equals("decode")) {
            ByteBuffer buffer = ByteBuffer.wrap(unhex(item.path("hex").asText()));
            Object message = construct(codec.reader, new ByteBufferAccessor(buffer), version);
            JsonNode json = (JsonNode) invoke(codec.toJson, null, message, version);
            withRecordBytes(json, message);
            result.set("json", json);
            result.put("remaining", buffer.remaining());
        } else {
            throw new IllegalArgumentException("unknown op " + op);
        }
        return result;
    }

    /** Every generated message class (one with a JsonConverter) with its version range. */
    private static JsonNode info() throws Exception {
        ObjectNode answer = MAPPER.createObjectNode();
        Properties release = new Properties();
        try (InputStream props = Message.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (props != null) {
                release.load(props);
            }
        }
        answer.put("kafka", release.getProperty("version", "unknown"));
        ObjectNode classes = answer.putObject("classes");
        String jarPath = Message.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        List<String> names = new ArrayList<>();
        try (JarFile jar = new JarFile(jarPath)) {
            Enumeration<JarEntry> entries = jar.entries();
            String prefix = PACKAGE.replace('.', '/');
            String suffix = "JsonConverter.class";
            while (entries.hasMoreElements()) {
                String name = entries.nextElement().getName();
                if (name.startsWith(prefix) && name.endsWith(suffix) && name.indexOf('$') < 0
                        && name.indexOf('/', prefix.length()) < 0) {
                    names.add(name.substring(prefix.length(), name.length() - suffix.length()));
                }
            }
        }
        Collections.sort(names);
        for (String name : names) {
            Class<?> data = Class.forName(PACKAGE + name);
            ArrayNode range = classes.putArray(name);
            range.add(data.getField("LOWEST_SUPPORTED_VERSION").getShort(null));
            range.add(data.getField("HIGHEST_SUPPORTED_VERSION").getShort(null));
        }
        // The versions ApiMessageType marks unstable (latestVersionUnstable: the newest versions a
        // release may still change), per request and response class.
        ObjectNode unstable = answer.putObject("unstable");
        for (ApiMessageType api : ApiMessageType.values()) {
            if (api.latestVersionUnstable()) {
                for (Message message : new Message[] {api.newRequest(), api.newResponse()}) {
                    ArrayNode versions = unstable.putArray(message.getClass().getSimpleName());
                    for (int v = api.highestSupportedVersion(false) + 1; v <= api.highestSupportedVersion(true); v++) {
                        versions.add(v);
                    }
                }
            }
        }
        return answer;
    }

    /**
     * Put the bytes of every non-null records field of {@code message} into {@code json}, where
     * JsonConverter left an empty value. JSON members are the spec's field names in camel case, which
     * are also the names of the generated accessors: walk both trees together.
     */
    private static void withRecordBytes(JsonNode json, Object message) throws Exception {
        if (!(json instanceof ObjectNode)) {
            return;
        }
        ObjectNode object = (ObjectNode) json;
        List<String> keys = new ArrayList<>();
        object.fieldNames().forEachRemaining(keys::add);
        for (String key : keys) {
            JsonNode child = object.get(key);
            if (!(child.isObject() || child.isArray() || child.isBinary())) {
                continue;
            }
            Method accessor;
            try {
                accessor = message.getClass().getMethod(key);
            } catch (NoSuchMethodException e) {
                continue;
            }
            Object value = accessor.invoke(message);
            if (value == null) {
                continue;
            }
            if (child.isBinary() && isRecords(value.getClass())) {
                ByteBuffer records = ((ByteBuffer) value.getClass().getMethod("buffer").invoke(value)).duplicate();
                byte[] bytes = new byte[records.remaining()];
                records.get(bytes);
                object.set(key, new BinaryNode(bytes));
            } else if (child.isObject()) {
                withRecordBytes(child, value);
            } else if (child.isArray() && value instanceof Iterable) {
                Iterator<?> elements = ((Iterable<?>) value).iterator();
                for (JsonNode element : child) {
                    if (!elements.hasNext()) {
                        break;
                    }
                    Object next = elements.next();
                    if (element.isObject() && next != null) {
                        withRecordBytes(element, next);
                    }
                }
            }
        }
    }

    /** BaseRecords moved packages between releases: recognise it by its simple name. */
    private static boolean isRecords(Class<?> type) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                if (i.getSimpleName().equals("BaseRecords") || isRecords(i)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static Object invoke(Method method, Object target, Object... args) throws Exception {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw rethrow(e);
        }
    }

    private static Object construct(Constructor<?> constructor, Object... args) throws Exception {
        try {
            return constructor.newInstance(args);
        } catch (InvocationTargetException e) {
            throw rethrow(e);
        }
    }

    private static Exception rethrow(InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof Exception) {
            return (Exception) cause;
        }
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        return e;
    }

    private static ObjectNode error(Throwable t) {
        ObjectNode answer = MAPPER.createObjectNode();
        answer.put("error", t.getClass().getName() + ": " + t.getMessage());
        return answer;
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static String hex(byte[] bytes) {
        char[] chars = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            chars[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            chars[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(chars);
    }

    private static byte[] unhex(String text) {
        if (text.length() % 2 != 0) {
            throw new IllegalArgumentException("odd number of hex digits");
        }
        byte[] bytes = new byte[text.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
        }
        return bytes;
    }
}
