package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The job's command line and start-up refusals, before any Flink runs (the runs themselves: tests/nearline). */
class JobTest {
    static final String MODEL = System.getProperty("fex.model");

    /** The exit status and what went to stderr. */
    record Ran(int status, String err) {}

    static Ran run(String... args) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Job.run(args, new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Ran(status, err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void badArgumentsAreUsageErrorsWithTheUsage() {
        Ran r = run("--config", MODEL, "--requests", "a", "--out", "o");
        assertEquals(Job.EX_USAGE, r.status());
        assertTrue(r.err().startsWith("error: missing --actions\nusage: fex.nearline.Job"), r.err());
        r = run("--config", MODEL, "--requests", "a", "--actions", "b", "--out", "o", "--parallelism", "0");
        assertEquals(Job.EX_USAGE, r.status());
        assertTrue(r.err().contains("--parallelism must be in 1..32768, not 0"), r.err());
        r = run("--config", MODEL, "--requests", "a", "--actions", "b", "--out", "o", "--batch", "--restore", "x");
        assertTrue(r.err().contains("are for streaming execution, not --batch"), r.err());
        r = run("--config", MODEL, "--requests", "a", "--actions", "b", "--out", "o", "--floor", "--batch");
        assertTrue(r.err().contains("--floor (the benchmark's floor) is for streaming over files"), r.err());
        r = run("--config", MODEL, "--requests", "kafka://t", "--actions", "b", "--out", "o");
        assertTrue(r.err().contains("kafka://t: Kafka needs --brokers"), r.err());
        r = run("--config", MODEL, "--requests", "a", "--actions", "b", "--out", "kafka://p", "--brokers", "h:1");
        assertTrue(r.err().contains("needs --checkpoint-dir"), r.err());
        r = run("--config", MODEL, "--requests", "a", "--actions", "b", "--out", "o", "--max-rate-per-input", "0");
        assertTrue(r.err().contains("--max-rate-per-input must be in 1.."), r.err());
    }

    @Test
    void aConfigThatCannotBeUsedIsRefusedAtTheStart(@TempDir Path dir) throws Exception {
        Ran r = run("--config", dir.resolve("absent.yaml").toString(), "--requests", "a", "--actions", "b", "--out", "o");
        assertEquals(Job.EX_USAGE, r.status());
        assertTrue(r.err().startsWith("error: cannot read the model config "), r.err());
        Path model = dir.resolve("m.yaml");
        Files.writeString(model, "name: m\nversion: '1'\nfeatures:\n  - {name: item_fids, kind: sparse}\n");
        r = run("--config", model.toString(), "--requests", "a", "--actions", "b", "--out", "o");
        assertEquals(Job.EX_USAGE, r.status());
        assertTrue(r.err().contains("m.yaml: the model config has no label_join: section"), r.err());
        Files.writeString(model, "name: m\nfeatures: [{name: x, kind: nope}]\n");
        r = run("--config", model.toString(), "--requests", "a", "--actions", "b", "--out", "o");
        assertEquals(Job.EX_USAGE, r.status());
        assertTrue(r.err().startsWith("error: " + model), r.err());
    }
}
