package fex.nearline;

import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * What the label join is measured against (the job's {@code --floor}, scripts/nearline_bench.py): the job's own
 * sources, parsing and watermarks, the same keyed shuffle by user, state backend and checkpoints, and per event the
 * least the join does for one, an append to keyed list state (the action's bytes, as the join holds an action that
 * waits); no timers, no rules, no library call, nothing written.
 */
final class Floor extends KeyedProcessFunction<String, Event, Void> {
    private static final long serialVersionUID = 1L;

    private transient ListState<byte[]> seen;

    static void wire(DataStream<Event> requests, DataStream<Event> actions) {
        TypeInformation<Event> eventType = TypeInformation.of(Event.class);
        requests.process(new Parse.Route(), eventType).name("bad requests out")
                .union(actions.process(new Parse.Route(), eventType).name("bad actions out"))
                .keyBy((Event e) -> e.userId, Types.STRING)
                .process(new Floor(), Types.VOID).name("floor")
                .sinkTo(new DiscardingSink<>()).name("discarded");
    }

    @Override
    public void open(OpenContext context) {
        seen = getRuntimeContext().getListState(
                new ListStateDescriptor<>("seen", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Void> out) throws Exception {
        if (e.action != null) {
            seen.add(e.action.encode());
        } else if (e.request != null) {
            seen.add(e.request.requestId.getBytes(StandardCharsets.UTF_8));
        }
    }
}
