import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { StartupError } from "../startup-error.js";

/** What the servers answer TLS with (both PEM). */
export interface TlsConfig {
  /** The certificate, optionally followed by its intermediate certificates. */
  cert: Buffer;
  /** Its private key, unencrypted. */
  key: Buffer;
  /**
   * The certificate blocks of `cert` alone, what runners are told to trust: never a key, even
   * when the certificate file is a combined one.
   */
  certificates: string;
}

/**
 * The HTTPS setting from MEETBOT_TLS_CERT and MEETBOT_TLS_KEY (paths): neither serves plain HTTP.
 * One without the other, a file that cannot be read, is not PEM or does not belong with the other
 * stops startup with one line naming the variable.
 */
export function tlsFromFiles(
  certPath: string | undefined,
  keyPath: string | undefined,
): TlsConfig | undefined {
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined || keyPath === undefined) {
    const [missing, set] =
      certPath === undefined
        ? ["MEETBOT_TLS_CERT", "MEETBOT_TLS_KEY"]
        : ["MEETBOT_TLS_KEY", "MEETBOT_TLS_CERT"];
    throw new StartupError(
      `${missing}: must be set too when ${set} is (HTTPS needs the certificate and its key; neither serves HTTP)`,
    );
  }
  return checkedTls(
    { name: "MEETBOT_TLS_CERT", file: certPath, pem: readPem("MEETBOT_TLS_CERT", certPath) },
    { name: "MEETBOT_TLS_KEY", file: keyPath, pem: readPem("MEETBOT_TLS_KEY", keyPath) },
  );
}

/** The same checks on PEM given directly (StartServerOptions.tls). */
export function checkedTlsOption(tls: { cert: string | Buffer; key: string | Buffer }): TlsConfig {
  return checkedTls(
    { name: "tls.cert", pem: Buffer.from(tls.cert) },
    { name: "tls.key", pem: Buffer.from(tls.key) },
  );
}

/**
 * The Fastify options for how HTTPS reaches an app: TLS of its own with `config.tls`, or through
 * the reverse proxies of `config.trustProxy` (whose X-Forwarded-For then gives request.ip). Typed
 * as no options: an https.Server gives Fastify the same request and response objects, while its
 * `https` option would change the app's server type everywhere the app is passed around.
 */
export function transportOptions(config: { tls: TlsConfig | undefined; trustProxy: string[] }): object {
  return {
    ...(config.tls ? { https: { cert: config.tls.cert, key: config.tls.key } } : {}),
    ...(config.trustProxy.length > 0 ? { trustProxy: config.trustProxy } : {}),
  };
}

interface Pem {
  /** The variable (or option) that gave it: every error line starts with it. */
  name: string;
  file?: string;
  pem: Buffer;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

const label = (pem: Pem) => (pem.file === undefined ? pem.name : `${pem.name}: ${pem.file}`);

function readPem(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String(error);
    throw new StartupError(`${variable}: cannot read ${file}: ${why}`);
  }
}

function checkedTls(cert: Pem, key: Pem): TlsConfig {
  // X509Certificate and createPrivateKey take DER too; Node's TLS server only PEM.
  if (!cert.pem.includes("-----BEGIN CERTIFICATE-----"))
    throw new StartupError(`${label(cert)} is not a PEM certificate (no -----BEGIN CERTIFICATE----- line)`);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert.pem);
  } catch (error) {
    throw new StartupError(`${label(cert)} is not a PEM certificate (${(error as Error).message})`);
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key.pem.toString("latin1")))
    throw new StartupError(
      `${label(key)} is not a PEM private key (no -----BEGIN ... PRIVATE KEY----- line)`,
    );
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key.pem);
  } catch (error) {
    throw new StartupError(
      `${label(key)} is not an unencrypted PEM private key (${(error as Error).message})`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new StartupError(
      `${label(key)} is not the private key of the certificate in ${cert.file ?? cert.name}`,
    );
  const certificates = cert.pem.toString("latin1").match(PEM_CERTIFICATE) ?? [];
  return { cert: cert.pem, key: key.pem, certificates: `${certificates.join("\n")}\n` };
}
