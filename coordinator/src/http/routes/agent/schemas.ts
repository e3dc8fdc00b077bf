/** Agent routes take no query string (the signature still covers one if sent; it is then a 422). */
export { noQuery } from '../../schemas/management.js';
