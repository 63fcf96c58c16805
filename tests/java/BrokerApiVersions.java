// Prints what a broker of the kafka-clients release on the classpath advertises in ApiVersions by
// default (broker listener, unstable versions hidden, client telemetry off), one "key min max" a line,
// as Kafka's own ApiVersionsResponse.filterApis computes it. 4.x has filterApis(ListenerType, boolean,
// boolean); 3.x has filterApis(RecordVersion, ListenerType, boolean, boolean).
import java.lang.reflect.Method;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.requests.ApiVersionsResponse;

public final class BrokerApiVersions {
    public static void main(String[] args) throws Exception {
        Object listener = ApiMessageType.ListenerType.BROKER;
        Object apis = null;
        for (Method m : ApiVersionsResponse.class.getMethods()) {
            if (!m.getName().equals("filterApis")) {
                continue;
            }
            Class<?>[] types = m.getParameterTypes();
            if (types.length == 3) {
                apis = m.invoke(null, listener, false, false);
            } else if (types.length == 4 && types[0].getSimpleName().equals("RecordVersion")) {
                Object current = types[0].getMethod("current").invoke(null);
                apis = m.invoke(null, current, listener, false, false);
            }
        }
        if (apis == null) {
            throw new IllegalStateException("no ApiVersionsResponse.filterApis of a known shape");
        }
        for (ApiVersionsResponseData.ApiVersion v : (ApiVersionsResponseData.ApiVersionCollection) apis) {
            System.out.println(v.apiKey() + " " + v.minVersion() + " " + v.maxVersion());
        }
    }
}
