import java.lang.reflect.Field;

/**
 * Starts DynamoDB Local bound to 127.0.0.1. Its command line has no host option and its Jetty
 * server binds every interface, with no authentication: this builds the server from the same
 * arguments, sets the host of its connectors before it starts, then starts it.
 * Compiled with `javac --release 17 DynamoDbLocalOnLoopback.java` (DynamoDB Local needs Java 17),
 * so a machine with only a Java runtime can run it.
 *
 * It also exits when its standard input reaches end of file: the process that started it holds
 * the other end of that pipe, and the kernel closes it when that process dies, even by SIGKILL,
 * where no exit handler runs. Without this a `kill -9` of `baton dev` left the JVM running, on
 * its port and with the `--data` database open.
 */
public final class DynamoDbLocalOnLoopback {
  private static final String LOOPBACK = "127.0.0.1";

  public static void main(String[] args) throws Exception {
    exitWhenParentGoes();
    Class<?> runner = Class.forName("software.amazon.dynamodb.services.local.main.ServerRunner");
    Object proxy = runner.getMethod("createServerFromCommandLineArgs", String[].class).invoke(null, (Object) args);
    Field field = proxy.getClass().getDeclaredField("server");
    field.setAccessible(true);
    Object jetty = field.get(proxy);
    Object[] connectors = (Object[]) jetty.getClass().getMethod("getConnectors").invoke(jetty);
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local has no connector to bind to " + LOOPBACK);
    for (Object connector : connectors) connector.getClass().getMethod("setHost", String.class).invoke(connector, LOOPBACK);
    proxy.getClass().getMethod("start").invoke(proxy);
    proxy.getClass().getMethod("join").invoke(proxy);
  }

  private static void exitWhenParentGoes() {
    Thread watcher = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // The parent never writes; anything it did would be ignored.
        }
      } catch (java.io.IOException closed) {
        // A broken pipe means the same: the parent is gone.
      }
      System.exit(0);
    }, "exit-with-parent");
    watcher.setDaemon(true);
    watcher.start();
  }
}
