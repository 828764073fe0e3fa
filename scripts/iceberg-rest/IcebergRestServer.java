// An Iceberg REST catalog on 127.0.0.1 for the tests: Iceberg's own protocol
// implementation (RESTCatalogAdapter and RESTCatalogServlet from iceberg-core,
// the classes apache/iceberg-rest-fixture serves) in front of any catalog
// Iceberg's Java library can build, a JDBC catalog on a SQLite file by default.
//
//   java -cp "$(cat target/iceberg-rest.classpath)" \
//        scripts/iceberg-rest/IcebergRestServer.java key=value ...
//
// Every key=value is a catalog property (uri, warehouse, io-impl, s3.*), but
// server.tls-keystore=PATH (a PKCS#12 file) and server.tls-password=PW, which
// make it serve HTTPS. The server binds an ephemeral port, prints "listening
// on 127.0.0.1:<port>" once it accepts connections, and stops when its
// standard input closes, so a test that dies takes the server with it.
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.ssl.SslContextFactory;

public class IcebergRestServer {
  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>();
    props.put("catalog-impl", JdbcCatalog.class.getName());
    props.put("jdbc.schema-version", "V1");
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (eq <= 0) {
        System.err.println("error: expected key=value, got " + arg);
        System.exit(64);
      }
      props.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    if (!props.containsKey("uri") || !props.containsKey("warehouse")) {
      System.err.println("error: give uri=jdbc:... and warehouse=...");
      System.exit(64);
    }
    String keystore = props.remove("server.tls-keystore");
    String password = props.remove("server.tls-password");
    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");
    Server server = new Server();
    ServerConnector connector;
    if (keystore != null) {
      SslContextFactory.Server tls = new SslContextFactory.Server();
      tls.setKeyStorePath(keystore);
      tls.setKeyStoreType("PKCS12");
      tls.setKeyStorePassword(password == null ? "" : password);
      connector = new ServerConnector(server, tls);
    } else {
      connector = new ServerConnector(server);
    }
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    System.out.println("listening on 127.0.0.1:" + connector.getLocalPort());
    System.out.flush();
    // Until the parent closes our standard input (or dies).
    while (System.in.read() != -1) {}
    server.stop();
    System.exit(0);
  }
}
