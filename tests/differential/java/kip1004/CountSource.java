package kip1004;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

public class CountSource extends SourceConnector {
    private Map<String, String> settings;

    @Override public String version() { return "1.0"; }
    @Override public void start(Map<String, String> props) { settings = props; }
    @Override public Class<? extends Task> taskClass() { return CountTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        int count = Integer.parseInt(settings.getOrDefault("task.count", Integer.toString(maxTasks)));
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < count; i++) configs.add(Map.of("task", Integer.toString(i)));
        return configs;
    }
    @Override public void stop() { }
    @Override public ConfigDef config() { return new ConfigDef(); }
}
