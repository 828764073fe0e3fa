package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/** The events' own encoding across the keyed shuffle: Flink picks it, and every kind of event comes back whole. */
class EventTypeTest {
    private static final TypeSerializer<Event> SERIALIZER =
            TypeInformation.of(Event.class).createSerializer(new SerializerConfigImpl());

    @Test
    void flinkTakesTheEventsOwnType() {
        assertTrue(TypeInformation.of(Event.class) instanceof EventType);
        assertSame(EventType.Serializer.INSTANCE, SERIALIZER);
    }

    @Test
    void everyKindComesBackWhole() throws IOException {
        Random r = new Random(7);
        DataOutputSerializer out = new DataOutputSerializer(64);
        List<Event> events = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            Event e = switch (i % 4) {
                case 0 -> Event.of(request(r, i));
                case 1 -> Event.of(new Action(r.nextLong(), text(r, i), text(r, i + 1), r.nextInt(), text(r, i + 2)));
                case 2 -> Event.end(text(r, i));
                default -> Event.bad("{\"kind\": \"bad_action\", \"line\": \"" + text(r, i) + "\"}");
            };
            events.add(e);
            SERIALIZER.serialize(e, out);
        }
        DataInputDeserializer in = new DataInputDeserializer(out.getCopyOfBuffer());
        for (Event e : events) {
            Event back = SERIALIZER.deserialize(in);
            assertEquals(describe(e), describe(back));
            // The kinds come back as the constants, so the join's checks of them hold.
            assertSame(e.kind, back.kind);
        }
        assertEquals(0, in.available());
        // A copy is whole and shares nothing mutable.
        for (Event e : events) {
            Event copy = SERIALIZER.copy(e);
            assertEquals(describe(e), describe(copy));
            if (e.request != null) {
                assertNotSame(e.request.itemIds, copy.request.itemIds);
                assertNotSame(e.request.logged, copy.request.logged);
            }
        }
    }

    @Test
    void aStreamOfAnotherEncodingIsRefused() {
        DataInputDeserializer in = new DataInputDeserializer(new byte[] {9, 0, 0, 0, 0});
        var e = assertThrows(IOException.class, () -> SERIALIZER.deserialize(in));
        assertEquals("an event of unknown kind 9 in the stream", e.getMessage());
    }

    @Test
    void itsSnapshotRestoresItAndIsCompatibleAsIs() throws IOException {
        TypeSerializerSnapshot<Event> snapshot = SERIALIZER.snapshotConfiguration();
        DataOutputSerializer out = new DataOutputSerializer(16);
        TypeSerializerSnapshot.writeVersionedSnapshot(out, snapshot);
        TypeSerializerSnapshot<Event> read = TypeSerializerSnapshot.readVersionedSnapshot(
                new DataInputDeserializer(out.getCopyOfBuffer()), getClass().getClassLoader());
        assertSame(EventType.Serializer.INSTANCE, read.restoreSerializer());
        assertTrue(SERIALIZER.snapshotConfiguration().resolveSchemaCompatibility(read).isCompatibleAsIs());
    }

    private static Request request(Random r, int i) {
        List<String> items = new ArrayList<>();
        for (int k = r.nextInt(4); k > 0; k--) {
            items.add(k == 2 ? "" : text(r, k));
        }
        Request q = new Request(text(r, i), text(r, i + 1), r.nextLong(), r.nextBoolean(), items);
        q.logged = new byte[r.nextInt(40)];
        r.nextBytes(q.logged);
        q.source = i % 3 == 0 ? "" : "topic-" + i;
        q.index = r.nextLong();
        q.offset = r.nextLong();
        if (r.nextBoolean()) {
            q.dueMs = r.nextLong();
            q.rule = "time";
            q.late = r.nextBoolean();
        }
        return q;
    }

    /** Strings of every width UTF-8 has, empty ones too. */
    private static String text(Random r, int i) {
        return switch (i % 4) {
            case 0 -> "";
            case 1 -> "u" + r.nextInt();
            case 2 -> "\u00e9\u4e2d" + r.nextInt();
            default -> "\ud83d\ude00" + r.nextInt();
        };
    }

    private static String describe(Event e) {
        StringBuilder s = new StringBuilder();
        s.append(e.kind).append('|').append(e.userId).append('|').append(e.time).append('|').append(e.bad);
        if (e.action != null) {
            Action a = e.action;
            s.append("|A ").append(a.eventTime).append(',').append(a.requestId).append(',').append(a.itemId)
                    .append(',').append(a.action).append(',').append(a.userId);
        }
        if (e.request != null) {
            Request q = e.request;
            s.append("|R ").append(q.requestId).append(',').append(q.userId).append(',').append(q.timeMs).append(',')
                    .append(q.refresh).append(',').append(q.itemIds).append(',').append(Arrays.toString(q.logged))
                    .append(',').append(q.source).append(',').append(q.index).append(',').append(q.offset).append(',')
                    .append(q.dueMs).append(',').append(q.rule).append(',').append(q.late);
        }
        return s.toString();
    }
}
