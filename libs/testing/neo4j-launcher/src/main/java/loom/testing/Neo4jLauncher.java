package loom.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * An embedded Neo4j Community DBMS for loom's tests (started by libs/testing/src/neo4j.ts).
 *
 * <p>Usage: {@code java -cp ... loom.testing.Neo4jLauncher <home directory> [<bolt port, 0 for any>]
 * [--delete-home-on-exit]}. The first
 * line of stdin is the password of the user {@code neo4j}. Prints {@code READY bolt://127.0.0.1:<port>} once Bolt
 * accepts connections. Each later stdin line {@code CLEAR} empties the database {@code neo4j} (data, indexes,
 * constraints) and answers {@code CLEARED} or {@code FAILED <reason>}. Shuts the DBMS down when stdin closes or on
 * SIGTERM, so the JVM never outlives the process that started it, and with {@code --delete-home-on-exit} then
 * removes the home directory, so a test process that was killed leaves nothing behind either.
 */
public final class Neo4jLauncher {
    private Neo4jLauncher() {}

    public static void main(String[] args) throws IOException {
        List<String> arguments = new ArrayList<>(List.of(args));
        boolean deleteHome = arguments.remove("--delete-home-on-exit");
        if (arguments.size() < 1 || arguments.size() > 2) {
            System.err.println("usage: Neo4jLauncher <home directory> [<bolt port>] [--delete-home-on-exit]"
                    + "  (the password on stdin's first line)");
            System.exit(2);
        }
        Path home = Path.of(arguments.get(0)).toAbsolutePath();
        int port = arguments.size() == 2 ? Integer.parseInt(arguments.get(1)) : 0;
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String password = stdin.readLine();
        if (password == null || password.isEmpty()) {
            System.err.println("Neo4jLauncher: no password on stdin");
            System.exit(2);
        }

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(64))
                // a throwaway database: no 256 MiB transaction log files written up front
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .setConfig(GraphDatabaseSettings.preallocate_store_files, false)
                // Bolt's event loops otherwise idle 5 s before stopping, on every test file's shutdown
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(5))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            dbms.shutdown();
            if (deleteHome) deleteRecursively(home);
        }, "neo4j-launcher-shutdown"));

        // the default user starts with the password "neo4j" and must change it; tests sign in with theirs at once
        dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
                .executeTransactionally(
                        "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED", Map.of("password", password));

        GraphDatabaseAPI system = (GraphDatabaseAPI) dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        int boundPort = system.getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT)
                .getPort();
        System.out.println("READY bolt://127.0.0.1:" + boundPort);
        System.out.flush();

        // stdin closes when the parent exits (however it ends): that is the signal to stop
        for (String command; (command = stdin.readLine()) != null; ) {
            GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            System.out.println(command.equals("CLEAR") ? clear(db) : "FAILED unknown command " + command);
            System.out.flush();
        }
        System.exit(0);
    }

    /** Drops every constraint and index (but the token lookup indexes) and deletes every node. */
    private static String clear(GraphDatabaseService db) {
        try {
            // schema and data changes cannot share a transaction; constraints first, as they own their indexes
            for (String name : names(db, "SHOW CONSTRAINTS YIELD name")) {
                db.executeTransactionally("DROP CONSTRAINT " + quoted(name));
            }
            for (String name : names(db, "SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name")) {
                db.executeTransactionally("DROP INDEX " + quoted(name));
            }
            db.executeTransactionally("MATCH (n) DETACH DELETE n");
            return "CLEARED";
        } catch (RuntimeException e) {
            return "FAILED " + String.valueOf(e.getMessage()).replace('\n', ' ');
        }
    }

    private static List<String> names(GraphDatabaseService db, String query) {
        return db.executeTransactionally(
                query, Map.of(), result -> result.stream().map(row -> (String) row.get("name")).toList());
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            // children before their parents
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(path);
        } catch (IOException | UncheckedIOException e) {
            System.err.println("Neo4jLauncher: cannot delete " + dir + ": " + e);
        }
    }

    private static String quoted(String name) {
        return "`" + name.replace("`", "``") + "`";
    }
}
