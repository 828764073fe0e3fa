package fex.nearline;

/**
 * An emitted request leaving the join for its sample computation: the logged request, its actions per row
 * ({@code rowLengths} actions each, in {@code actions}), and what the manifest says of it. A POJO for Flink's
 * serializer.
 */
public class Joined {
    public String requestId;
    public String userId;
    public long timeMs;
    public long dueMs;
    public String rule;
    public byte[] logged;
    public int[] rowLengths;
    public int[] actions;
    /** The joined actions as a JSON array, for the manifest. */
    public byte[] joinedJson;
    /** How many actions {@code joinedJson} holds. */
    public int actionsJoined;
    public boolean lateRequest;
    public String source = "";
    public long index = -1;
    public long offset = -1;

    public Joined() {}

    /** The actions per row, as the library takes them. */
    public int[][] rows() {
        int[][] rows = new int[rowLengths.length][];
        int at = 0;
        for (int i = 0; i < rows.length; i++) {
            rows[i] = java.util.Arrays.copyOfRange(actions, at, at + rowLengths[i]);
            at += rowLengths[i];
        }
        return rows;
    }
}
