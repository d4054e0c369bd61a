/**
 * Saves text as a file. The export routes take the key in a header, so a plain link cannot
 * fetch them: the console fetches the file and hands the browser a blob: URL to save.
 */
export function saveFile(filename: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has handed the file over.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const EXPORT_TYPES = { csv: 'text/csv', jsonl: 'application/x-ndjson' } as const;
