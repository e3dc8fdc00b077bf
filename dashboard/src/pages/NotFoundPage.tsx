import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing is at this address. <Link to="/">Go to the dashboard&apos;s home</Link>.
      </p>
    </section>
  );
}
