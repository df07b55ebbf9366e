import { useEffect, useState } from "preact/hooks";
import { authorizedFetch } from "../api.js";

/**
 * A failed bot's artifacts (`deploymentError.artifacts`: API paths). They need the bearer token,
 * which an <img src> cannot send: each is fetched, kept as a blob URL for as long as it is shown
 * (the page's policy admits `img-src blob:`), the screenshot shown, the rest offered as downloads.
 */
export function BotArtifacts({ paths }: { paths: string[] }) {
  return (
    <ul class="artifacts">
      {paths.map((path) => (
        <li key={path}>
          <Artifact path={path} />
        </li>
      ))}
    </ul>
  );
}

function Artifact({ path }: { path: string }) {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const [file, setFile] = useState<{ url: string; image: boolean }>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let url: string | undefined;
    let gone = false;
    void (async () => {
      try {
        const response = await authorizedFetch(path);
        if (!response.ok) throw new Error(`${name} could not be fetched (HTTP ${response.status})`);
        const blob = await response.blob();
        if (gone) return;
        url = URL.createObjectURL(blob);
        setFile({ url, image: blob.type.startsWith("image/") });
      } catch (failure) {
        if (!gone) setError((failure as Error).message);
      }
    })();
    return () => {
      gone = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [path, name]);

  if (error) return <span class="error">{error}</span>;
  if (!file) return <span class="muted">Loading {name}…</span>;
  return (
    <figure>
      {file.image ? (
        <img class="screenshot" src={file.url} alt={`Screenshot of the meeting page (${name})`} />
      ) : null}
      <figcaption>
        <a href={file.url} download={name}>
          Download {name}
        </a>
      </figcaption>
    </figure>
  );
}
