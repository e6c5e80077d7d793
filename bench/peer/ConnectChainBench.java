// The formats bench's chain through Apache Kafka Connect itself, for the peer ratio printed
// by bench/formats_bench.py: JsonConverter (schemas.enable=true) -> RegexRouter ->
// MaskField$Value -> InsertField$Value -> JsonConverter, one thread, CPU time.
//
// Usage: java -cp <connect jars>:<dir> ConnectChainBench <input> <rounds>
// <input> holds records as 4-byte big-endian length + bytes; record i has offset i and
// timestamp 1700000000000 + i / 100, as in the Python bench. Prints, per round, the records
// per CPU second, then the CRC32 and count of the last round's outputs (each output as
// 4-byte length + bytes), which the Python side compares with its own.
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.transforms.InsertField;
import org.apache.kafka.connect.transforms.MaskField;
import org.apache.kafka.connect.transforms.RegexRouter;
import org.apache.kafka.connect.transforms.Transformation;

public class ConnectChainBench {
    static final String TOPIC = "mysql.customers";
    static final long TIMESTAMP = 1_700_000_000_000L;
    static final int RECORDS_PER_MS = 100;

    public static void main(String[] args) throws Exception {
        List<byte[]> inputs = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new FileInputStream(args[0]))) {
            while (in.available() > 0) {
                byte[] data = new byte[in.readInt()];
                in.readFully(data);
                inputs.add(data);
            }
        }
        int rounds = Integer.parseInt(args[1]);
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "true"), false);
        RegexRouter<SinkRecord> route = new RegexRouter<>();
        route.configure(Map.of("regex", "mysql\\.(.*)", "replacement", "processed.$1"));
        MaskField<SinkRecord> mask = new MaskField.Value<>();
        mask.configure(Map.of("fields", "email,phone,credit_card"));
        InsertField<SinkRecord> insert = new InsertField.Value<>();
        insert.configure(Map.of("timestamp.field", "ingested_at"));
        List<Transformation<SinkRecord>> chain = List.of(route, mask, insert);
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        byte[][] outputs = new byte[inputs.size()][];
        for (int round = 0; round < rounds; round++) {
            long start = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < inputs.size(); i++) {
                SchemaAndValue sv = converter.toConnectData(TOPIC, inputs.get(i));
                SinkRecord record = new SinkRecord(TOPIC, 0, null, null, sv.schema(), sv.value(),
                        i, TIMESTAMP + i / RECORDS_PER_MS, TimestampType.CREATE_TIME);
                for (Transformation<SinkRecord> t : chain) {
                    record = t.apply(record);
                }
                outputs[i] = converter.fromConnectData(record.topic(), record.valueSchema(),
                        record.value());
            }
            long elapsed = cpu.getCurrentThreadCpuTime() - start;
            System.out.println("round " + (inputs.size() * 1e9 / elapsed));
        }
        CRC32 crc = new CRC32();
        for (byte[] out : outputs) {
            crc.update(ByteBuffer.allocate(4).putInt(out.length).array());
            crc.update(out);
        }
        System.out.println("crc " + crc.getValue() + " count " + outputs.length);
    }
}
