package fex.nearline;

/**
 * An output record: its bytes and the key a Kafka topic gets it with (the user id, so a user's records stay in one
 * partition in order; null for none). Files take the bytes alone ({@link RawBytesEncoder}). A POJO for Flink's
 * serializer.
 */
public class Keyed {
    public String key;
    public byte[] value;

    public Keyed() {}

    public Keyed(String key, byte[] value) {
        this.key = key;
        this.value = value;
    }
}
