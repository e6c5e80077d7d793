package kip1004;

import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class CountTask extends SourceTask {
    @Override public String version() { return "1.0"; }
    @Override public void start(Map<String, String> props) { }
    @Override public List<SourceRecord> poll() throws InterruptedException {
        Thread.sleep(100);
        return null;
    }
    @Override public void stop() { }
}
