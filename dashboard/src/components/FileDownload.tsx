import { useMutation } from '../lib/mutation';
import { downloadUrl } from '../api/files';
import { ErrorMessage } from './ErrorMessage';

/**
 * A download of a stored file: each click asks the coordinator for a fresh presigned URL (they
 * expire) and has the browser fetch it; the coordinator serves it as an attachment under its name.
 */
export function FileDownload({ orgId, fileId, label }: { orgId: string; fileId: string; label: string }) {
  const download = useMutation({
    mutationFn: () => downloadUrl(orgId, fileId),
    onSuccess: ({ downloadUrl: url }) => {
      const link = document.createElement('a');
      link.href = url;
      link.rel = 'noopener';
      document.body.append(link);
      link.click();
      link.remove();
    },
  });
  return (
    <div className="file-download">
      <button type="button" onClick={() => download.mutate()} disabled={download.isPending} aria-label={label}>
        Download
      </button>
      <ErrorMessage error={download.error} />
    </div>
  );
}
