import { useEffect, useRef } from "preact/hooks";
import { useCopy } from "./ui.js";

/**
 * A secret shown in full (a new API key, a webhook's signing secret) with a Copy button. When the
 * clipboard refuses (no permission, an insecure origin), the text is selected instead so that
 * Ctrl+C copies it. `focus`: a secret that just appeared in place of the form that made it takes
 * the focus, so that a keyboard user lands on its Copy button rather than at the top of the page.
 */
export function SecretValue({
  value,
  label,
  focus = false,
}: {
  value: string;
  label: string;
  focus?: boolean;
}) {
  const { copy, message } = useCopy();
  const code = useRef<HTMLElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (focus) button.current?.focus();
  }, [focus]);

  const selectCode = () => {
    if (code.current) window.getSelection()?.selectAllChildren(code.current);
  };

  return (
    <div class="secret">
      <code aria-label={label} ref={code}>
        {value}
      </code>
      <button type="button" class="secondary" onClick={() => void copy(value, selectCode)} ref={button}>
        Copy
      </button>
      <span role="status" class="hint">
        {message ?? ""}
      </span>
    </div>
  );
}
